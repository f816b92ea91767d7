// detkit._C's keypoints: the keypoint head's heatmap encoding and decoding
// (modeling/roi_heads/keypoint_head.h), under detkit.structures.keypoints' Detectron2 names.
#include <torch/csrc/utils/pybind.h>

#include "detkit/modeling/roi_heads/keypoint_head.h"
#include "detkit/utils/error.h"
#include "python/src/bindings.h"

namespace detkit::python {
namespace py = pybind11;

void bind_keypoints(py::module_& m) {
  m.def(
      "keypoints_to_heatmap",
      [](const at::Tensor& keypoints, const at::Tensor& rois, int64_t heatmap_size) {
        try {
          return modeling::keypoints_to_heatmap(keypoints, rois, heatmap_size);
        } catch (const c10::Error& e) {
          throw Error(std::string("Keypoints.to_heatmap: ") + e.msg());
        }
      },
      py::arg("keypoints"), py::arg("rois"), py::arg("heatmap_size"));
  m.def(
      "heatmaps_to_keypoints",
      [](const at::Tensor& maps, const at::Tensor& rois) {
        try {
          return modeling::heatmaps_to_keypoints(maps, rois);
        } catch (const c10::Error& e) {
          throw Error(std::string("heatmaps_to_keypoints: ") + e.msg());
        }
      },
      py::arg("maps"), py::arg("rois"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace detkit::python
