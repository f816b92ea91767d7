#include "detkit/distributed/launcher.h"

#include <netinet/in.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "detkit/utils/error.h"
#include "detkit/utils/stop_signal.h"

extern char** environ;

namespace detkit::distributed {

void check_launch_options(const LaunchOptions& o) {
  if (o.num_processes < 1)
    throw Error("--num-gpus must be at least 1, got " + std::to_string(o.num_processes));
  if (o.num_machines < 1)
    throw Error("--num-machines must be at least 1, got " + std::to_string(o.num_machines));
  if (o.machine_rank < 0 || o.machine_rank >= o.num_machines)
    throw Error("--machine-rank " + std::to_string(o.machine_rank) + " is outside 0.." +
                std::to_string(o.num_machines - 1) + " (--num-machines " +
                std::to_string(o.num_machines) + ")");
  if (o.timeout.count() < 1)
    throw Error("--dist-timeout must be at least 1 second, got " +
                std::to_string(o.timeout.count()));
}

namespace {
int free_local_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    throw Error(std::string("--dist-url auto: cannot open a socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int err = errno;
  close(fd);
  if (!ok)
    throw Error(std::string("--dist-url auto: no free port on 127.0.0.1: ") + std::strerror(err));
  return ntohs(addr.sin_port);
}
}  // namespace

MasterAddress resolve_dist_url(const std::string& url, int num_machines) {
  if (url == "auto") {
    if (num_machines > 1)
      throw Error(
          "--dist-url auto works on one machine only; give every machine machine 0's "
          "tcp://HOST:PORT");
    return {"127.0.0.1", free_local_port()};
  }
  auto bad = [&](const std::string& why) {
    return Error("--dist-url '" + url + "': " + why + " (expected auto or tcp://HOST:PORT)");
  };
  const std::string scheme = "tcp://";
  if (url.rfind(scheme, 0) != 0) throw bad("not a tcp:// address");
  const std::string rest = url.substr(scheme.size());
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) throw bad("no port");
  std::string host = rest.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')  // [IPv6]
    host = host.substr(1, host.size() - 2);
  if (host.empty()) throw bad("no host");
  const std::string port = rest.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
      std::stoi(port) > 65535)
    throw bad("the port must be a number in 1..65535");
  return {host, std::stoi(port)};
}

int threads_per_worker(int num_processes) {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, cores / std::max(1, num_processes));
}

std::vector<std::string> worker_variables(const LaunchOptions& o, const MasterAddress& master,
                                          int local_rank, int threads) {
  const int world = o.num_machines * o.num_processes;
  const int rank = o.machine_rank * o.num_processes + local_rank;
  std::vector<std::string> vars = {
      "RANK=" + std::to_string(rank),
      "WORLD_SIZE=" + std::to_string(world),
      "LOCAL_RANK=" + std::to_string(local_rank),
      "LOCAL_WORLD_SIZE=" + std::to_string(o.num_processes),
      "MASTER_ADDR=" + master.host,
      "MASTER_PORT=" + std::to_string(master.port),
      "DETKIT_LAUNCHED=1",
  };
  const char* set = std::getenv("DETKIT_NUM_THREADS");
  if (!set || !*set) vars.push_back("DETKIT_NUM_THREADS=" + std::to_string(threads));
  return vars;
}

std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  size_t begin = 0;
  while (begin < all.size()) {
    const size_t end = all.find('\0', begin);
    args.push_back(all.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  if (args.empty()) throw Error("cannot read this process's command line from /proc/self/cmdline");
  return args;
}

namespace {
volatile sig_atomic_t g_signal = 0, g_signals = 0;  // the last signal, and how many came
void remember_signal(int sig) {
  g_signal = sig;
  g_signals = g_signals + 1;
}

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  bool finished = false;   // exited 0
  bool preempted = false;  // stopped on a signal after its checkpoint (kPreemptedExitCode)
  std::string ending;      // how it ended when it failed: "exited with code 1", "was killed by ..."
};

std::string describe_ending(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + signal_name(sig) + ")";
  }
  return "ended with status " + std::to_string(status);
}

// Starts one worker: this executable, `argv`, the environment plus `vars`; it gets SIGKILL when
// the launcher dies.
pid_t start_worker(const std::vector<std::string>& argv, const std::vector<std::string>& vars) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    const std::string name = v.substr(0, v.find('='));
    const bool replaced = std::any_of(vars.begin(), vars.end(), [&](const std::string& x) {
      return x.compare(0, name.size() + 1, name + "=") == 0;
    });
    if (!replaced) env.push_back(v);
  }
  env.insert(env.end(), vars.begin(), vars.end());
  std::vector<char*> envp, args;
  for (auto& v : env) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw Error(std::string("cannot start a worker process: ") + std::strerror(errno));
  if (pid == 0) {  // only async-signal-safe calls until exec
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the launcher died before prctl
    execve("/proc/self/exe", args.data(), envp.data());
    _exit(127);
  }
  return pid;
}

// How long the workers get to finish their step and save after a stop signal before SIGKILL.
constexpr auto kStopGrace = std::chrono::seconds(120);

void signal_all(std::vector<Worker>& workers, int sig) {
  for (const Worker& w : workers)
    if (w.running) kill(w.pid, sig);
}
}  // namespace

void launch(const std::vector<std::string>& command, const LaunchOptions& options) {
  check_launch_options(options);
  const MasterAddress master = resolve_dist_url(options.dist_url, options.num_machines);
  const int threads = threads_per_worker(options.num_processes);
  spdlog::info(
      "Launching {} worker processes on machine {} of {} (ranks {}..{} of {}), "
      "rendezvous {}:{}, {} threads each unless --num-threads or DETKIT_NUM_THREADS say",
      options.num_processes, options.machine_rank, options.num_machines,
      options.machine_rank * options.num_processes,
      (options.machine_rank + 1) * options.num_processes - 1,
      options.num_machines * options.num_processes, master.host, master.port, threads);

  struct sigaction on_signal {
  }, old_int{}, old_term{};
  on_signal.sa_handler = remember_signal;
  sigemptyset(&on_signal.sa_mask);
  g_signal = g_signals = 0;
  sigaction(SIGINT, &on_signal, &old_int);
  sigaction(SIGTERM, &on_signal, &old_term);

  std::vector<Worker> workers(options.num_processes);
  std::vector<std::string> failures;
  bool stopping = false;
  auto kill_after = std::chrono::steady_clock::time_point::max();
  auto stop = [&] {
    if (stopping) return;
    stopping = true;
    signal_all(workers, SIGTERM);
    kill_after = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  };
  try {
    for (int local = 0; local < options.num_processes; ++local) {
      Worker& w = workers[local];
      w.rank = options.machine_rank * options.num_processes + local;
      w.pid = start_worker(command, worker_variables(options, master, local, threads));
      w.running = true;
    }
  } catch (...) {
    signal_all(workers, SIGKILL);
    for (Worker& w : workers)
      if (w.running) waitpid(w.pid, nullptr, 0);
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    throw;
  }

  int interrupted = 0, forwarded = 0;
  auto running = [&] {
    return std::count_if(workers.begin(), workers.end(), [](const Worker& w) { return w.running; });
  };
  while (running() > 0) {
    // Pass the user's Ctrl-C or the scheduler's SIGTERM on: the workers save a checkpoint after
    // their step and exit; a second signal, passed on too, makes them exit at once.
    if (g_signals > forwarded) {
      forwarded = g_signals;
      if (!interrupted) kill_after = std::chrono::steady_clock::now() + kStopGrace;
      interrupted = g_signal;
      stopping = true;
      signal_all(workers, interrupted);
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      auto w = std::find_if(workers.begin(), workers.end(),
                            [&](const Worker& x) { return x.pid == pid; });
      if (w == workers.end()) continue;
      w->running = false;
      const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      w->finished = clean;
      if (WIFEXITED(status) && WEXITSTATUS(status) == kPreemptedExitCode) {
        w->preempted = true;  // every rank stops after the same step: the others follow
        continue;
      }
      // A worker that ends while the others are being stopped was stopped, unless it failed first.
      // (A worker a second signal stopped exits with 128 + that signal.)
      const bool stopped_by_us =
          stopping &&
          ((WIFSIGNALED(status) && (WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGKILL ||
                                    WTERMSIG(status) == interrupted)) ||
           (interrupted && WIFEXITED(status) && WEXITSTATUS(status) == 128 + interrupted));
      if (!clean && !stopped_by_us) {
        failures.push_back("rank " + std::to_string(w->rank) + " (pid " + std::to_string(pid) +
                           ") " + describe_ending(status));
        spdlog::error("Worker {}; stopping the other ranks", failures.back());
        stop();
      }
      continue;
    }
    if (stopping && std::chrono::steady_clock::now() > kill_after) signal_all(workers, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (!failures.empty()) {
    std::string message = failures.front();
    for (size_t i = 1; i < failures.size(); ++i) message += "; then " + failures[i];
    throw Error("distributed launch: " + message + "; the other ranks were stopped");
  }
  const auto preempted =
      std::count_if(workers.begin(), workers.end(), [](const Worker& w) { return w.preempted; });
  const auto finished =
      std::count_if(workers.begin(), workers.end(), [](const Worker& w) { return w.finished; });
  if (preempted == static_cast<long>(workers.size()))
    throw Preempted(
        "distributed launch: every rank of this machine stopped after saving a "
        "checkpoint" +
        (interrupted ? " (" + signal_name(interrupted) + ")" : "") +
        "; run the same command with --resume to continue");
  // A signal that came too late to stop anything (the last evaluation) leaves a finished job.
  if (interrupted && finished < static_cast<long>(workers.size()) && preempted == 0)
    throw Error("distributed launch: interrupted by " + signal_name(interrupted) +
                "; the workers were stopped");
  if (preempted > 0)
    throw Error("distributed launch: " + std::to_string(preempted) + " of " +
                std::to_string(workers.size()) +
                " ranks stopped on a signal after a checkpoint, the others ended normally");
}

}  // namespace detkit::distributed
