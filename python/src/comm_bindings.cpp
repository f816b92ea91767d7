// detkit._C's distributed side: the environments detkit.engine.launch gives its worker
// processes (what `detkit train --num-gpus` gives its own), joining the job they describe, and
// Detectron2's comm functions over detkit's communicator.
#include <pybind11/stl.h>

#include <chrono>
#include <map>

#include "detkit/distributed/comm.h"
#include "detkit/distributed/launch_environment.h"
#include "detkit/distributed/launcher.h"
#include "detkit/utils/error.h"
#include "python/src/bindings.h"

namespace detkit::python {
namespace py = pybind11;

void bind_comm(py::module_& m) {
  m.def(
      "launch_environments",
      [](int num_processes, int num_machines, int machine_rank, const std::string& dist_url) {
        distributed::LaunchOptions options;
        options.num_processes = num_processes;
        options.num_machines = num_machines;
        options.machine_rank = machine_rank;
        options.dist_url = dist_url;
        distributed::check_launch_options(options);
        const auto master = distributed::resolve_dist_url(dist_url, num_machines);
        const int threads = distributed::threads_per_worker(num_processes);
        std::vector<std::map<std::string, std::string>> environments;
        for (int local = 0; local < num_processes; ++local) {
          std::map<std::string, std::string> variables;
          for (const auto& pair : distributed::worker_variables(options, master, local, threads)) {
            const size_t equals = pair.find('=');
            variables[pair.substr(0, equals)] = pair.substr(equals + 1);
          }
          environments.push_back(std::move(variables));
        }
        return environments;
      },
      py::arg("num_processes"), py::arg("num_machines"), py::arg("machine_rank"),
      py::arg("dist_url"),
      "Each local worker's variables (RANK, WORLD_SIZE, MASTER_ADDR, ...), as `detkit train "
      "--num-gpus` sets them; the options checked with the CLI's errors");
  m.def(
      "join_job",
      [](double timeout_s) {
        py::gil_scoped_release released;
        const auto timeout =
            std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0));
        if (!distributed::init_from_environment(timeout))
          throw Error("this process's environment describes no job of several ranks (RANK, "
                      "WORLD_SIZE, MASTER_ADDR, MASTER_PORT)");
      },
      py::arg("timeout_s"),
      "Joins the job the environment describes (Gloo), waiting at most timeout_s for the "
      "rendezvous and for any one collective");
  m.def("get_rank", &distributed::get_rank);
  m.def("get_world_size", &distributed::get_world_size);
  m.def("get_local_rank", &distributed::get_local_rank);
  m.def("get_local_size", &distributed::get_local_size);
  m.def("is_main_process", &distributed::is_main_process);
  m.def("synchronize", &distributed::synchronize, py::call_guard<py::gil_scoped_release>());
}

}  // namespace detkit::python
