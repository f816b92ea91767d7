// detkit._C's training side: default_setup, the built-in datasets, the COCO catalog, and
// engine::DefaultTrainer (what `detkit train` runs), the GIL released while it works, with hooks
// written in Python.
#include <pybind11/stl.h>

#include <memory>

#include "detkit/data/catalog.h"
#include "detkit/data/voc/pascal_voc.h"
#include "detkit/engine/defaults.h"
#include "detkit/engine/predictor.h"
#include "detkit/utils/error.h"
#include "python/src/bindings.h"

namespace detkit::python {
namespace py = pybind11;

namespace {

// A Python hook (detkit.engine.HookBase): its methods run with the GIL taken back; an exception
// one raises ends train() and reaches the caller as itself.
class PythonHook : public engine::HookBase {
 public:
  explicit PythonHook(py::object hook) : hook_(std::move(hook)) {}
  ~PythonHook() override {
    py::gil_scoped_acquire gil;
    hook_ = py::object();
  }
  void before_train(engine::Trainer&) override { call("before_train"); }
  void before_step(engine::Trainer&) override { call("before_step"); }
  void after_step(engine::Trainer&) override { call("after_step"); }
  void after_train(engine::Trainer&) override { call("after_train"); }

 private:
  void call(const char* method) {
    py::gil_scoped_acquire gil;
    hook_.attr(method)();
  }
  py::object hook_;
};

engine::Trainer& running(engine::DefaultTrainer& t) {
  if (t.trainer() == nullptr) throw Error("the trainer has not started: call train() first");
  return *t.trainer();
}

}  // namespace

// Reports by task -> {task: {metric: value}} with Detectron2's metric names.
std::map<std::string, std::map<std::string, double>> results_by_task(
    const std::map<std::string, evaluation::CocoEvalReport>& reports) {
  std::map<std::string, std::map<std::string, double>> out;
  for (const auto& [task, report] : reports)
    for (const auto& [metric, value] : evaluation::detectron2_results(report))
      out[task][metric] = value;
  return out;
}

void bind_trainer(py::module_& m) {
  m.def(
      "evaluate_predictor",
      [](engine::DefaultPredictor& predictor, const config::CfgNode& cfg, const std::string& name,
         const std::string& output_dir) {
        py::gil_scoped_release released;
        return results_by_task(engine::evaluate_dataset(cfg, predictor.model(), name, output_dir));
      },
      py::arg("predictor"), py::arg("cfg"), py::arg("dataset"), py::arg("output_dir"));
  m.def(
      "evaluate_trainer",
      [](engine::DefaultTrainer& trainer, const config::CfgNode& cfg, const std::string& name,
         const std::string& output_dir) {
        py::gil_scoped_release released;
        return results_by_task(engine::evaluate_dataset(cfg, *trainer.model(), name, output_dir));
      },
      py::arg("trainer"), py::arg("cfg"), py::arg("dataset"), py::arg("output_dir"));
  m.def(
      "evaluate_model",
      [](modeling::MetaArch& model, const config::CfgNode& cfg, const std::string& name,
         const std::string& output_dir) {
        py::gil_scoped_release released;
        return results_by_task(engine::evaluate_dataset(cfg, model, name, output_dir));
      },
      py::arg("model"), py::arg("cfg"), py::arg("dataset"), py::arg("output_dir"));
  m.def("register_coco_instances", &data::register_coco_instances, py::arg("name"),
        py::arg("json_file"), py::arg("image_root"));
  m.def("register_lvis_instances", &data::register_lvis_instances, py::arg("name"),
        py::arg("json_file"), py::arg("image_root"));
  m.def("register_pascal_voc", &data::register_pascal_voc, py::arg("name"), py::arg("dirname"),
        py::arg("split"), py::arg("year"));
  m.def("register_coco_panoptic", &data::register_coco_panoptic, py::arg("name"),
        py::arg("image_root"), py::arg("panoptic_root"), py::arg("panoptic_json"),
        py::arg("instances_json"));
  m.def("register_coco_panoptic_separated", &data::register_coco_panoptic_separated,
        py::arg("name"), py::arg("image_root"), py::arg("panoptic_root"), py::arg("panoptic_json"),
        py::arg("sem_seg_root"), py::arg("instances_json"));
  m.def("voc_class_names", [] { return data::voc_class_names(); });
  m.def("registered_datasets", [] { return data::global_catalog().names(); });
  m.def(
      "default_setup",
      [](const config::CfgNode& cfg) {
        const uint64_t seed = engine::default_setup(cfg);
        engine::ensure_builtin_datasets(cfg);
        return seed;
      },
      py::arg("cfg"),
      "OUTPUT_DIR with config.yaml and log.txt, the built-in shapes dataset when named; the seed");
  py::class_<engine::DefaultTrainer, std::shared_ptr<engine::DefaultTrainer>>(m, "Trainer")
      .def(py::init([](const config::CfgNode& cfg, uint64_t seed) {
             py::gil_scoped_release released;
             return std::make_shared<engine::DefaultTrainer>(cfg, seed);
           }),
           py::arg("cfg"), py::arg("seed"))
      .def("resume_or_load", &engine::DefaultTrainer::resume_or_load, py::arg("resume"),
           py::call_guard<py::gil_scoped_release>())
      .def("train", &engine::DefaultTrainer::train, py::call_guard<py::gil_scoped_release>())
      .def("register_hook",
           [](engine::DefaultTrainer& t, py::object hook) {
             t.register_hooks({std::make_shared<PythonHook>(std::move(hook))});
           })
      .def_property_readonly("iter", [](engine::DefaultTrainer& t) { return running(t).iter(); })
      .def(
          "storage_latest",
          [](engine::DefaultTrainer& t) {
            // Every metric's latest value and the iteration it was recorded at.
            return running(t).storage().latest_with_smoothing_hint(1);
          },
          "{name: (value, iteration)}, as Detectron2's EventStorage.latest()");
}

}  // namespace detkit::python
