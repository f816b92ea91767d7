// detkit._C.draw_instance_predictions: visualization::draw_predictions (what `detkit infer` draws)
// on a BGR numpy image and a prediction's fields; detkit.utils.visualizer.Visualizer gives it
// Detectron2's interface; draw_overlays draws what its overlay_instances and draw_* methods
// are given.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <opencv2/imgproc.hpp>

#include "detkit/structures/boxes.h"
#include "detkit/utils/error.h"
#include "detkit/visualization/visualizer.h"
#include "python/src/bindings.h"

namespace detkit::python {
namespace py = pybind11;

namespace {

py::array_t<uint8_t> draw(const py::array_t<uint8_t, py::array::c_style>& bgr,
                          const std::map<std::string, at::Tensor>& fields,
                          const std::vector<std::string>& class_names, double scale) {
  if (bgr.ndim() != 3 || bgr.shape(2) != 3)
    throw Error("Visualizer: the image must be (H, W, 3) uint8");
  if (!(scale > 0)) throw Error("Visualizer: scale must be positive, got " + std::to_string(scale));
  const int h = static_cast<int>(bgr.shape(0)), w = static_cast<int>(bgr.shape(1));
  structures::Instances predictions(h, w);
  for (const auto& [name, tensor] : fields) {
    if (name == "pred_boxes")
      predictions.set(name, structures::Boxes(tensor));
    else
      predictions.set(name, tensor);
  }
  for (const char* needed : {"pred_boxes", "scores", "pred_classes"})
    if (!predictions.has(needed))
      throw Error(std::string("Visualizer: the predictions have no '") + needed + "'");
  const cv::Mat image(h, w, CV_8UC3, const_cast<uint8_t*>(bgr.data()));
  cv::Mat canvas;
  {
    py::gil_scoped_release released;
    visualization::VisualizerOptions options;
    options.min_short_side = 0;  // Detectron2 draws at the image's size times `scale`
    canvas = visualization::draw_predictions(image, predictions, class_names, options);
    if (scale != 1.0)
      cv::resize(canvas, canvas, cv::Size(), scale, scale,
                 scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
    cv::cvtColor(canvas, canvas, cv::COLOR_BGR2RGB);
  }
  py::array_t<uint8_t> out({canvas.rows, canvas.cols, 3});
  for (int y = 0; y < canvas.rows; ++y)
    std::memcpy(out.mutable_data(y), canvas.ptr(y), static_cast<size_t>(canvas.cols) * 3);
  return out;
}

// detkit.utils.visualizer's overlays: instances given as dicts of what to draw, in the image's
// pixels ("box" [x0, y0, x1, y1], "draw_box", "label", "mask" (H, W) uint8, "polygons" (flat
// coordinate lists), "keypoints" [[x, y, score]], "color" [r, g, b] in 0..1, "outline" (flat
// coordinates of a closed outline)), drawn on an RGB image enlarged by `scale`.
visualization::DrawnInstance drawn_instance(const py::dict& d, double scale, cv::Size size,
                                            size_t index) {
  visualization::DrawnInstance out;
  auto points = [&](const std::vector<double>& xy) {
    if (xy.size() % 2 != 0)
      throw Error("Visualizer: instance " + std::to_string(index) +
                  ": a polygon or outline has an odd number of coordinates");
    std::vector<cv::Point2d> pts;
    for (size_t k = 0; k + 1 < xy.size(); k += 2)
      pts.emplace_back(xy[k] * scale, xy[k + 1] * scale);
    return pts;
  };
  if (d.contains("box")) {
    const auto box = d["box"].cast<std::vector<double>>();
    if (box.size() != 4)
      throw Error("Visualizer: instance " + std::to_string(index) + ": a box has 4 values");
    for (int k = 0; k < 4; ++k) out.box[k] = box[k] * scale;
  }
  out.draw_box = d.contains("box") && (!d.contains("draw_box") || d["draw_box"].cast<bool>());
  if (d.contains("label")) out.label = d["label"].cast<std::string>();
  if (d.contains("mask")) {
    const auto mask =
        d["mask"].cast<py::array_t<uint8_t, py::array::c_style | py::array::forcecast>>();
    if (mask.ndim() != 2)
      throw Error("Visualizer: instance " + std::to_string(index) + ": a mask is (H, W)");
    const cv::Mat view(static_cast<int>(mask.shape(0)), static_cast<int>(mask.shape(1)), CV_8U,
                       const_cast<uint8_t*>(mask.data()));
    cv::resize(view, out.mask, size, 0, 0, cv::INTER_NEAREST);
  }
  if (d.contains("polygons"))
    for (const auto& polygon : d["polygons"].cast<std::vector<std::vector<double>>>())
      out.polygons.push_back(points(polygon));
  if (d.contains("outline")) out.outline = points(d["outline"].cast<std::vector<double>>());
  if (d.contains("keypoints"))
    for (const auto& k : d["keypoints"].cast<std::vector<std::array<double, 3>>>())
      out.keypoints.push_back({k[0] * scale, k[1] * scale, k[2]});
  if (d.contains("color")) {
    const auto rgb = d["color"].cast<std::array<double, 3>>();
    out.color = cv::Scalar(rgb[2] * 255, rgb[1] * 255, rgb[0] * 255);
  }
  return out;
}

py::array_t<uint8_t> draw_overlays(
    const py::array_t<uint8_t, py::array::c_style>& rgb, const py::list& instances, double scale,
    double mask_alpha,
    const std::vector<std::pair<std::array<int64_t, 2>, std::array<int, 3>>>& skeleton) {
  if (rgb.ndim() != 3 || rgb.shape(2) != 3)
    throw Error("Visualizer: the image must be (H, W, 3) uint8");
  if (!(scale > 0)) throw Error("Visualizer: scale must be positive, got " + std::to_string(scale));
  const int h = static_cast<int>(rgb.shape(0)), w = static_cast<int>(rgb.shape(1));
  const cv::Size size(std::max(1, static_cast<int>(std::lround(w * scale))),
                      std::max(1, static_cast<int>(std::lround(h * scale))));
  std::vector<visualization::DrawnInstance> drawn;
  for (size_t i = 0; i < instances.size(); ++i)
    drawn.push_back(drawn_instance(instances[i].cast<py::dict>(), scale, size, i));
  cv::Mat canvas;
  {
    py::gil_scoped_release released;
    cv::Mat bgr;
    cv::cvtColor(cv::Mat(h, w, CV_8UC3, const_cast<uint8_t*>(rgb.data())), bgr, cv::COLOR_RGB2BGR);
    if (size != bgr.size())
      cv::resize(bgr, bgr, size, 0, 0, scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
    visualization::VisualizerOptions options;
    options.min_short_side = 0;
    options.mask_alpha = mask_alpha;
    options.keypoint_skeleton = skeleton;
    canvas = visualization::draw_instances(bgr, drawn, options);
    cv::cvtColor(canvas, canvas, cv::COLOR_BGR2RGB);
  }
  py::array_t<uint8_t> out({canvas.rows, canvas.cols, 3});
  for (int y = 0; y < canvas.rows; ++y)
    std::memcpy(out.mutable_data(y), canvas.ptr(y), static_cast<size_t>(canvas.cols) * 3);
  return out;
}

}  // namespace

void bind_visualizer(py::module_& m) {
  m.def("draw_overlays", &draw_overlays, py::arg("rgb"), py::arg("instances"), py::arg("scale"),
        py::arg("mask_alpha") = 0.45,
        py::arg("skeleton") = std::vector<std::pair<std::array<int64_t, 2>, std::array<int, 3>>>{},
        "Instances (dicts: box, draw_box, label, mask, polygons, keypoints, color, outline) "
        "drawn on an RGB image enlarged by `scale`: an RGB array");
  m.def("draw_instance_predictions", &draw, py::arg("bgr"), py::arg("fields"),
        py::arg("class_names"), py::arg("scale") = 1.0,
        "The predictions drawn on the image, as an RGB (H * scale, W * scale, 3) uint8 array");
}

}  // namespace detkit::python
