// detkit._C's checkpoint matching for detkit.checkpoint (Detectron2's DetectionCheckpointer):
// Caffe2 Detectron's weight names to Detectron2's, and a checkpoint's keys matched to a model's
// by the longest dot-bounded suffix (detkit/checkpoint/matching_heuristics.h), as `detkit train`
// loads MODEL.WEIGHTS.
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "detkit/checkpoint/caffe2_names.h"
#include "detkit/checkpoint/matching_heuristics.h"
#include "python/src/bindings.h"

namespace detkit::python {
namespace py = pybind11;

void bind_checkpoint(py::module_& m) {
  m.def(
      "convert_caffe2_names",
      [](const checkpoint::TensorDict& weights) {
        checkpoint::RenamedWeights renamed = checkpoint::convert_caffe2_detectron_names(weights);
        return py::make_tuple(renamed.weights, renamed.original);
      },
      py::arg("weights"),
      "(weights by Detectron2 name, {Detectron2 name: Caffe2 name}) for a Caffe2 Detectron "
      "checkpoint's weights");
  m.def("align_to_model", &checkpoint::align_to_model, py::arg("model"), py::arg("checkpoint"),
        py::arg("original") = std::map<std::string, std::string>{},
        "the checkpoint's tensors under the model's keys (longest dot-bounded suffix match)",
        py::call_guard<py::gil_scoped_release>());
}

}  // namespace detkit::python
