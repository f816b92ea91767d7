// detkit._C: the native engine behind the `detkit` Python package. Tensors cross as torch
// tensors (libtorch_python, the same libtorch as Debian's python3-torch); detkit::Error becomes
// detkit.Error, a RuntimeError with the same message.
#include <dlfcn.h>
#include <pybind11/pybind11.h>

#include "detkit/utils/blas.h"
#include "detkit/utils/error.h"
#include "detkit/utils/stop_signal.h"
#include "detkit/utils/threads.h"
#include "python/src/bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "detkit's native engine (config, model zoo, DefaultPredictor, DefaultTrainer)";
  pybind11::register_exception<detkit::Error>(m, "Error", PyExc_RuntimeError);
  // Training stopped by SIGINT / SIGTERM after saving its checkpoint: to Python, Ctrl-C's own
  // KeyboardInterrupt (registered after Error, so that it is the one that matches).
  pybind11::register_exception<detkit::Preempted>(m, "Preempted", PyExc_KeyboardInterrupt);
  // The CLI starts itself again where OpenBLAS picked its generic kernels (Intel Emerald Rapids
  // under Debian's 0.3.21: 5-7x slower Linear layers); a Python process cannot, so the kernels
  // are switched in place, before anything here computes.
  detkit::switch_to_better_openblas_kernels();
  m.def("blas_report", &detkit::blas_kernel_report,
        "The CLI's log line on the BLAS: its build, kernels (and who chose them), threads");
  m.def(
      "blas_warning",
      [] { return detkit::narrower_openblas_kernels_warning().value_or(""); },
      "The CLI's warning when OPENBLAS_CORETYPE names kernels narrower than the CPU's; '' if none");
  detkit::python::bind_comm(m);
  detkit::python::bind_config(m);
  detkit::python::bind_model_zoo(m);
  detkit::python::bind_predictor(m);
  detkit::python::bind_trainer(m);
  detkit::python::bind_visualizer(m);
  m.def(
      "configure_threads",
      [](int requested) {
        const int n = detkit::configure_threads(requested);
        // A Python process keeps the BLAS python3-torch loaded: Debian's pthreads OpenBLAS, whose
        // own threads spin after each call and take the cores from libtorch's OpenMP team (the
        // CLI restarts itself on the OpenMP build instead). With one BLAS thread a Mask R-CNN
        // prediction ran at the CLI's speed, 5.44 images/s where two threads gave 2.44
        // (bench/python_predictor, AMD EPYC Zen 4, 2 cores).
        if (detkit::openblas_threading() == detkit::OpenblasThreading::kPthreads) {
          using SetThreads = void (*)(int);
          if (auto set =
                  reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
            set(1);
        }
        return n;
      },
      pybind11::arg("requested") = 0,
      "libtorch's threads as the CLI sets them: `requested` if > 0, else $DETKIT_NUM_THREADS, "
      "else every core (returned); a pthreads OpenBLAS gets one thread of its own");
}
