#pragma once
// `detkit train --num-gpus N`: Detectron2's launch(). This process starts N workers (this
// executable with the same arguments and torchrun's variables set, so each joins the job as in
// an external launch), then supervises them: when one exits non-zero or is killed, the others are
// stopped and the error names every rank that failed and how. Workers die with the launcher
// (PR_SET_PDEATHSIG), so none is left behind.
#include <chrono>
#include <string>
#include <vector>

namespace detkit::distributed {

struct LaunchOptions {
  int num_processes = 1;               // --num-gpus: workers on this machine
  int num_machines = 1;                // --num-machines
  int machine_rank = 0;                // --machine-rank
  std::string dist_url = "auto";       // --dist-url
  std::chrono::seconds timeout{1800};  // --dist-timeout
};

struct MasterAddress {
  std::string host;
  int port = 0;
};

/// A detkit::Error naming the flag when the options do not describe a job (fewer than one
/// process or machine, a machine rank outside 0..num-machines-1).
void check_launch_options(const LaunchOptions& options);

/// --dist-url: "auto" is 127.0.0.1 and a port free now (one machine only, as Detectron2);
/// "tcp://HOST:PORT" names machine 0's rendezvous. Anything else is a detkit::Error quoting it.
MasterAddress resolve_dist_url(const std::string& url, int num_machines);

/// The libtorch threads each of `num_processes` workers on this machine gets: the cores shared
/// out, at least one.
int threads_per_worker(int num_processes);

/// The variables worker `local_rank` gets on top of this process's environment: RANK,
/// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, DETKIT_LAUNCHED=1, and
/// DETKIT_NUM_THREADS (`threads`) unless the environment sets it already. Global rank = machine
/// rank × processes per machine + local rank.
std::vector<std::string> worker_variables(const LaunchOptions& options, const MasterAddress& master,
                                          int local_rank, int threads);

/// Starts options.num_processes workers running `command` (argv[0] is ignored: they run this
/// executable) and waits for them. Returns when every worker exited 0; otherwise stops the rest
/// (SIGTERM, then SIGKILL after 10 s) and throws a detkit::Error naming each failed rank with its
/// exit code or signal. SIGINT / SIGTERM sent to the launcher are passed on to the workers, each
/// one (a second makes them exit at once); they get 120 s to finish their step and save before
/// SIGKILL. Workers that all exit with kPreemptedExitCode (stopped after saving) make it throw a
/// detkit::Preempted; workers stopped before they could save, a detkit::Error.
void launch(const std::vector<std::string>& command, const LaunchOptions& options);

/// This process's own command line (/proc/self/cmdline).
std::vector<std::string> own_command_line();

}  // namespace detkit::distributed
