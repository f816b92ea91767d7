// detkit._C: the native engine behind the `detkit` Python package. Tensors cross as torch
// tensors (libtorch_python, the torch of the Python environment detkit was built against);
// detkit::Error becomes detkit.Error, a RuntimeError with the same message.
#include <pybind11/pybind11.h>

#include "detkit/utils/error.h"
#include "detkit/utils/stop_signal.h"
#include "detkit/utils/threads.h"
#include "detkit/utils/torch_build.h"
#include "python/src/bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "detkit's native engine (config, model zoo, DefaultPredictor, DefaultTrainer)";
  pybind11::register_exception<detkit::Error>(m, "Error", PyExc_RuntimeError);
  // Training stopped by SIGINT / SIGTERM after saving its checkpoint: to Python, Ctrl-C's own
  // KeyboardInterrupt (registered after Error, so that it is the one that matches).
  pybind11::register_exception<detkit::Preempted>(m, "Preempted", PyExc_KeyboardInterrupt);
  m.def("torch_build_report", &detkit::torch_build_report,
        "The CLI's log line on the torch build detkit runs on: its version, BLAS, oneDNN and "
        "OpenMP threads");
  detkit::python::bind_checkpoint(m);
  detkit::python::bind_cocoeval(m);
  detkit::python::bind_comm(m);
  detkit::python::bind_config(m);
  detkit::python::bind_image(m);
  detkit::python::bind_keypoints(m);
  detkit::python::bind_masks(m);
  detkit::python::bind_metadata(m);
  detkit::python::bind_model(m);
  detkit::python::bind_model_zoo(m);
  detkit::python::bind_predictor(m);
  detkit::python::bind_trainer(m);
  detkit::python::bind_transforms(m);
  detkit::python::bind_visualizer(m);
  m.def("configure_threads", &detkit::configure_threads, pybind11::arg("requested") = 0,
        "libtorch's threads as the CLI sets them: `requested` if > 0, else $DETKIT_NUM_THREADS, "
        "else every core (returned)");
}
