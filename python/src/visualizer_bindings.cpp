// detkit._C.draw_instance_predictions: visualization::draw_predictions (what `detkit infer` draws)
// on a BGR numpy image and a prediction's fields; detkit.utils.visualizer.Visualizer gives it
// Detectron2's interface.
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

}  // namespace

void bind_visualizer(py::module_& m) {
  m.def("draw_instance_predictions", &draw, py::arg("bgr"), py::arg("fields"),
        py::arg("class_names"), py::arg("scale") = 1.0,
        "The predictions drawn on the image, as an RGB (H * scale, W * scale, 3) uint8 array");
}

}  // namespace detkit::python
