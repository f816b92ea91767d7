#include "tools/launch_flags.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "detkit/distributed/launch_environment.h"

namespace detkit::tools {

void add_launch_flags(CLI::App* cmd, distributed::LaunchOptions& o) {
  cmd->add_option("--num-gpus", o.num_processes,
                  "worker processes on this machine (one per device; on CPU, ranks sharing the "
                  "cores, each with cores/N threads unless --num-threads says)")
      ->capture_default_str();
  cmd->add_option("--num-machines", o.num_machines, "machines taking part")->capture_default_str();
  cmd->add_option("--machine-rank", o.machine_rank, "this machine's rank, 0..num-machines-1")
      ->capture_default_str();
  cmd->add_option("--dist-url", o.dist_url,
                  "rendezvous: 'auto' (a free local port, one machine) or tcp://HOST:PORT of "
                  "machine 0")
      ->capture_default_str();
  cmd->add_option_function<int64_t>(
         "--dist-timeout",
         [&o](int64_t s) { o.timeout = std::chrono::seconds(s); },
         "seconds to wait for every rank to join, and for any one collective (default 1800)")
      ->check(CLI::PositiveNumber);
}

bool launch_or_join(const distributed::LaunchOptions& options) {
  distributed::check_launch_options(options);
  const bool several = options.num_processes > 1 || options.num_machines > 1;
  if (distributed::init_from_environment(options.timeout)) {
    if (several && !std::getenv("DETKIT_LAUNCHED"))  // set for the workers this launcher starts
      spdlog::warn("--num-gpus / --num-machines ignored: this process is rank {} of the job its "
                   "launcher started", distributed::get_rank());
    return false;
  }
  if (!several) return false;
  distributed::launch(distributed::own_command_line(), options);
  return true;
}

}  // namespace detkit::tools
