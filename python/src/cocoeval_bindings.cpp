// detkit._C.COCOevalPrepared: detkit's COCOeval (per-image matching and accumulation) over
// annotations and IoUs that pycocotools' COCOeval prepared in Python, for
// detkit.evaluation.fast_eval_api.COCOeval_opt (Detectron2's fast_eval_api, whose C++ part is
// this). Boxes, masks and keypoints stay in Python: only ids, areas, scores, flags and the IoU
// matrices cross.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <memory>

#include "detkit/evaluation/coco_eval.h"
#include "detkit/utils/error.h"
#include "python/src/bindings.h"

namespace detkit::python {
namespace py = pybind11;
using evaluation::COCOeval;
using evaluation::EvalObject;
using evaluation::EvalParams;
using evaluation::IouType;

namespace {

IouType iou_type_of(const std::string& name) {
  if (name == "bbox") return IouType::Bbox;
  if (name == "segm") return IouType::Segm;
  if (name == "keypoints") return IouType::Keypoints;
  throw Error("COCOeval: iouType '" + name + "' is not one of bbox, segm, keypoints");
}

// (id, image_id, category_id, area, iscrowd, num_keypoints)
std::vector<EvalObject> ground_truth(
    const std::vector<std::tuple<int64_t, int64_t, int64_t, double, bool, int64_t>>& rows) {
  std::vector<EvalObject> out;
  for (const auto& [id, image, category, area, crowd, keypoints] : rows) {
    EvalObject o;
    o.id = id, o.image_id = image, o.category_id = category, o.area = area, o.iscrowd = crowd;
    o.num_keypoints = keypoints;
    out.push_back(o);
  }
  return out;
}

// (id, image_id, category_id, score, area)
std::vector<EvalObject> detections(
    const std::vector<std::tuple<int64_t, int64_t, int64_t, double, double>>& rows) {
  std::vector<EvalObject> out;
  for (const auto& [id, image, category, score, area] : rows) {
    EvalObject o;
    o.id = id, o.image_id = image, o.category_id = category, o.score = score, o.area = area;
    out.push_back(o);
  }
  return out;
}

COCOeval::IouMatrices iou_matrices(const py::dict& ious) {
  COCOeval::IouMatrices out;
  for (auto item : ious) {
    auto key = item.first.cast<std::pair<int64_t, int64_t>>();
    auto matrix =
        py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(item.second);
    if (!matrix)
      throw Error("COCOeval: the IoUs of image " + std::to_string(key.first) + ", category " +
                  std::to_string(key.second) + " are not an array of numbers");
    out[key].assign(matrix.data(), matrix.data() + matrix.size());
  }
  return out;
}

py::array_t<double> as_array(const std::vector<double>& values, std::vector<size_t> shape) {
  py::array_t<double> out(shape);
  std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}

}  // namespace

void bind_cocoeval(py::module_& m) {
  py::class_<COCOeval>(m, "COCOevalPrepared")
      .def(py::init(
               [](const std::vector<std::tuple<int64_t, int64_t, int64_t, double, bool, int64_t>>&
                      gts,
                  const std::vector<std::tuple<int64_t, int64_t, int64_t, double, double>>& dts,
                  std::vector<int64_t> image_ids, std::vector<int64_t> category_ids,
                  const std::string& iou_type, std::vector<double> iou_thresholds,
                  std::vector<double> recall_thresholds, std::vector<int64_t> max_dets,
                  std::vector<std::array<double, 2>> area_ranges,
                  std::vector<std::string> area_labels, bool use_cats, const py::dict& ious) {
                 EvalParams params;
                 params.iou_thresholds = std::move(iou_thresholds);
                 params.recall_thresholds = std::move(recall_thresholds);
                 params.max_dets = std::move(max_dets);
                 params.area_ranges = std::move(area_ranges);
                 params.area_labels = std::move(area_labels);
                 params.use_cats = use_cats;
                 params.image_ids = image_ids;
                 params.category_ids = category_ids;
                 return std::make_unique<COCOeval>(ground_truth(gts), detections(dts),
                                                   std::move(image_ids), std::move(category_ids),
                                                   iou_type_of(iou_type), std::move(params),
                                                   iou_matrices(ious));
               }),
           py::arg("gts"), py::arg("dts"), py::arg("image_ids"), py::arg("category_ids"),
           py::arg("iou_type"), py::arg("iou_thresholds"), py::arg("recall_thresholds"),
           py::arg("max_dets"), py::arg("area_ranges"), py::arg("area_labels"), py::arg("use_cats"),
           py::arg("ious"))
      .def("evaluate", &COCOeval::evaluate, py::call_guard<py::gil_scoped_release>())
      .def("accumulate", &COCOeval::accumulate, py::call_guard<py::gil_scoped_release>())
      .def("counts",
           [](const COCOeval& e) {
             const EvalParams& p = e.params();
             return std::vector<size_t>{p.iou_thresholds.size(), p.recall_thresholds.size(),
                                        p.use_cats ? p.category_ids.size() : 1,
                                        p.area_ranges.size(), p.max_dets.size()};
           })
      .def("arrays", [](const COCOeval& e) {
        // (precision, recall, scores) in pycocotools' shapes, -1 where undefined.
        const EvalParams& p = e.params();
        const size_t T = p.iou_thresholds.size(), R = p.recall_thresholds.size(),
                     K = p.use_cats ? p.category_ids.size() : 1, A = p.area_ranges.size(),
                     M = p.max_dets.size();
        return py::make_tuple(as_array(e.precision(), {T, R, K, A, M}),
                              as_array(e.recall(), {T, K, A, M}),
                              as_array(e.scores(), {T, R, K, A, M}));
      });
}

}  // namespace detkit::python
