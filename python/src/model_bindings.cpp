// detkit._C.Model: a detkit model (modeling::MetaArch, built from a config) for
// detkit.modeling's nn.Module wrappers. Its parameters and buffers cross as the model's own
// tensors (no copy: the Python module's parameters are the tensors the C++ layers train), and it
// runs Detectron2's batched inputs: losses() in training, outputs() in evaluation, the GIL
// released while it computes.
#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "detkit/analysis/flop_count.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/structures/instances.h"
#include "detkit/structures/masks.h"
#include "detkit/utils/error.h"
#include "python/src/bindings.h"
#include "python/src/model_outputs.h"

namespace detkit::python {
namespace py = pybind11;

namespace {

// One Instances from what detkit.modeling passes: (h, w) and {name: tensor, or (kind, data)}
// with kind "boxes" (an (N, 4) tensor), "polygons" (per instance, a list of flat coordinate
// lists) or "bitmasks" (an (N, H, W) tensor).
structures::Instances to_instances(const py::tuple& image_size, const py::dict& fields,
                                   size_t index) {
  structures::Instances out(image_size[0].cast<int64_t>(), image_size[1].cast<int64_t>());
  for (const auto& [key, value] : fields) {
    const std::string name = key.cast<std::string>();
    try {
      if (THPVariable_Check(value.ptr())) {
        out.set(name, value.cast<at::Tensor>());
        continue;
      }
      const py::tuple pair = value.cast<py::tuple>();
      const std::string kind = pair[0].cast<std::string>();
      if (kind == "boxes") {
        out.set(name, structures::Boxes(pair[1].cast<at::Tensor>()));
      } else if (kind == "polygons") {
        out.set(name, structures::PolygonMasks(
                          pair[1].cast<std::vector<std::vector<structures::Polygon>>>()));
      } else if (kind == "bitmasks") {
        out.set(name, structures::BitMasks(pair[1].cast<at::Tensor>()));
      } else {
        throw Error("unknown field kind '" + kind + "'");
      }
    } catch (const std::exception& e) {
      throw Error("model input " + std::to_string(index) + ": instances field '" + name +
                  "': " + e.what());
    }
  }
  return out;
}

// Detectron2's batched inputs as detkit's: per image {"image": (C, H, W) float tensor,
// "height", "width", "file_name" (optional), "instances": ((h, w), fields),
// "sem_seg": (H, W) int64}.
std::vector<structures::ModelInput> to_inputs(const py::list& batch) {
  std::vector<structures::ModelInput> inputs;
  for (size_t i = 0; i < batch.size(); ++i) {
    const py::dict d = batch[i].cast<py::dict>();
    structures::ModelInput input;
    input.image = d["image"].cast<at::Tensor>();
    input.height = d["height"].cast<int64_t>();
    input.width = d["width"].cast<int64_t>();
    if (d.contains("file_name")) input.file_name = d["file_name"].cast<std::string>();
    if (d.contains("instances")) {
      const py::tuple instances = d["instances"].cast<py::tuple>();
      input.instances =
          to_instances(instances[0].cast<py::tuple>(), instances[1].cast<py::dict>(), i);
    }
    if (d.contains("sem_seg")) input.sem_seg = d["sem_seg"].cast<at::Tensor>();
    inputs.push_back(std::move(input));
  }
  return inputs;
}

template <class Dict>
py::list named(const Dict& dict) {
  py::list out;
  for (const auto& item : dict) out.append(py::make_tuple(item.key(), item.value()));
  return out;
}

}  // namespace

void bind_model(py::module_& m) {
  using modeling::MetaArch;
  py::class_<MetaArch, std::shared_ptr<MetaArch>>(m, "Model")
      .def("name", &MetaArch::name)
      .def("named_parameters", [](MetaArch& model) { return named(model.named_parameters()); })
      .def("named_buffers", [](MetaArch& model) { return named(model.named_buffers()); })
      .def(
          "train", [](MetaArch& model, bool on) { model.train(on); }, py::arg("mode"))
      .def("is_training", [](const MetaArch& model) { return model.is_training(); })
      .def(
          "losses",
          [](MetaArch& model, const py::list& batch) {
            std::vector<structures::ModelInput> inputs = to_inputs(batch);
            structures::LossDict losses;
            {
              py::gil_scoped_release released;
              losses = model.losses(inputs);
            }
            return losses;
          },
          py::arg("batched_inputs"))
      .def(
          "outputs",
          [](MetaArch& model, const py::list& batch) {
            std::vector<structures::ModelInput> inputs = to_inputs(batch);
            std::vector<structures::ModelOutput> outputs;
            {
              py::gil_scoped_release released;
              outputs = model.outputs(inputs);
            }
            py::list out;
            for (const auto& output : outputs) out.append(output_dict(output));
            return out;
          },
          py::arg("batched_inputs"));
  // FLOPs of one evaluation pass, counted as fvcore counts them (analysis/flop_count.h):
  // ({operator: flops}, {module: flops}).
  m.def(
      "model_flop_count",
      [](MetaArch& model, const py::list& batch) {
        std::vector<structures::ModelInput> inputs = to_inputs(batch);
        std::map<std::string, int64_t> by_operator, by_module;
        {
          py::gil_scoped_release released;
          at::NoGradGuard no_grad;
          const bool was_training = model.is_training();
          model.eval();
          {
            analysis::FlopCounter counter(model);
            model.outputs(inputs);
            by_operator = counter.by_operator();
            by_module = counter.by_module();
          }
          model.train(was_training);
        }
        return py::make_tuple(by_operator, by_module);
      },
      py::arg("model"), py::arg("batched_inputs"));
  m.def(
      "build_model",
      [](const config::CfgNode& cfg) {
        py::gil_scoped_release released;
        return modeling::build_model(cfg);
      },
      py::arg("cfg"), "MODEL.META_ARCHITECTURE built from the config, on MODEL.DEVICE");
}

}  // namespace detkit::python
