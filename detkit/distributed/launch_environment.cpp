#include "detkit/distributed/launch_environment.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "detkit/utils/cuda_build.h"
#include "detkit/utils/error.h"

namespace detkit::distributed {

namespace {
Error launch_error(const std::string& message) {
  return Error("distributed launch: " + message);
}

int parse_int(const char* name, const std::string& v) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0 || n > 1 << 20)
    throw launch_error(std::string(name) + "='" + v + "' is not a non-negative integer");
  return static_cast<int>(n);
}

class Variables {
 public:
  explicit Variables(const Getenv& getenv) : getenv_(getenv) {}
  std::optional<std::string> get(const char* name) const {
    const char* v = getenv_(name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  }
  std::string required(const char* name) const {
    if (auto v = get(name)) return *v;
    throw launch_error(std::string("environment variable ") + name + " is not set");
  }
  int integer(const char* name) const { return parse_int(name, required(name)); }
  int integer(const char* name, int fallback) const {
    auto v = get(name);
    return v ? parse_int(name, *v) : fallback;
  }

 private:
  const Getenv& getenv_;
};

LaunchedJob from_torchrun(const Variables& env) {
  LaunchedJob job;
  job.launcher = "torchrun";
  Topology& t = job.topology;
  t.world_size = env.integer("WORLD_SIZE");
  t.rank = env.integer("RANK");
  t.local_rank = env.integer("LOCAL_RANK", t.rank);
  t.local_world_size = env.integer("LOCAL_WORLD_SIZE", t.world_size);
  job.rendezvous.master_addr = env.required("MASTER_ADDR");
  job.rendezvous.master_port = env.integer("MASTER_PORT");
  return job;
}

LaunchedJob from_slurm(const Variables& env) {
  LaunchedJob job;
  job.launcher = "slurm";
  Topology& t = job.topology;
  t.world_size = env.integer("SLURM_NTASKS");
  t.rank = env.integer("SLURM_PROCID");
  t.local_rank = env.integer("SLURM_LOCALID");
  const auto per_node = env.get("SLURM_STEP_TASKS_PER_NODE") ? env.get("SLURM_STEP_TASKS_PER_NODE")
                                                             : env.get("SLURM_TASKS_PER_NODE");
  t.local_world_size = per_node ? first_node_tasks(*per_node) : t.world_size;
  if (auto addr = env.get("MASTER_ADDR")) {
    job.rendezvous.master_addr = *addr;
  } else {
    const char* names[] = {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"};
    std::optional<std::string> nodes;
    for (const char* name : names)
      if (!nodes) nodes = env.get(name);
    if (!nodes) throw launch_error("environment variable SLURM_JOB_NODELIST is not set (nor MASTER_ADDR)");
    job.rendezvous.master_addr = first_host(*nodes);
  }
  if (env.get("MASTER_PORT"))
    job.rendezvous.master_port = env.integer("MASTER_PORT");
  else if (env.get("SLURM_JOB_ID"))
    job.rendezvous.master_port = 20000 + env.integer("SLURM_JOB_ID") % 20000;
  else
    job.rendezvous.master_port = 29500;
  return job;
}
}  // namespace

std::optional<LaunchedJob> job_from_environment(const Getenv& getenv) {
  const Variables env(getenv);
  std::optional<LaunchedJob> job;
  if (env.get("WORLD_SIZE")) {
    if (env.integer("WORLD_SIZE") > 1) job = from_torchrun(env);
  } else if (env.get("SLURM_STEP_ID") && env.get("SLURM_NTASKS")) {
    // srun sets SLURM_STEP_ID; a batch script's own shell (one process) does not.
    if (env.integer("SLURM_NTASKS") > 1) job = from_slurm(env);
  }
  if (job) check_topology(job->topology);
  return job;
}

std::string first_host(const std::string& nodelist) {
  auto bad = [&](const std::string& why) {
    return Error("SLURM node list '" + nodelist + "': " + why);
  };
  std::string host;
  size_t i = 0;
  while (i < nodelist.size() && nodelist[i] != ',') {
    if (nodelist[i] == ']') throw bad("']' without '['");
    if (nodelist[i] != '[') {
      host += nodelist[i++];
      continue;
    }
    const size_t close = nodelist.find(']', i);
    if (close == std::string::npos) throw bad("'[' without ']'");
    // The range's first value, as written (leading zeros are part of the name).
    const std::string range = nodelist.substr(i + 1, close - i - 1);
    const std::string first = range.substr(0, range.find_first_of(",-"));
    if (first.empty() || first.find_first_not_of("0123456789") != std::string::npos)
      throw bad("'[" + range + "]' does not start with a number");
    host += first;
    i = close + 1;
  }
  if (host.empty()) throw bad("no host");
  return host;
}

int first_node_tasks(const std::string& tasks_per_node) {
  const std::string first = tasks_per_node.substr(0, tasks_per_node.find_first_of("(,"));
  const int n = parse_int("SLURM_TASKS_PER_NODE", first);
  if (n < 1) throw launch_error("SLURM_TASKS_PER_NODE='" + tasks_per_node + "' has no tasks");
  return n;
}

bool init_from_environment(std::chrono::milliseconds timeout) {
  auto job = job_from_environment([](const char* name) { return std::getenv(name); });
  if (!job) return false;
  job->rendezvous.timeout = timeout;
  // One GPU per rank, made current before NCCL binds to it; NCCL where there is one (as
  // Detectron2's launch), Gloo on CPU; DETKIT_DIST_BACKEND chooses.
  const int gpu = use_gpu_of_local_rank(job->topology.local_rank);
  job->rendezvous.gpu = gpu;
  const char* backend = std::getenv("DETKIT_DIST_BACKEND");
  job->rendezvous.backend = backend && *backend ? backend : gpu >= 0 ? "nccl" : "gloo";
  auto communicator = std::make_shared<ProcessGroupCommunicator>(job->topology, job->rendezvous);
  install(communicator);
  spdlog::info("Joined the job of {} started by {}: rank {} of {} (local rank {} of {}), {}{}",
               job->topology.world_size, job->launcher, job->topology.rank,
               job->topology.world_size, job->topology.local_rank, job->topology.local_world_size,
               communicator->description(),
               gpu < 0 ? "" : ", GPU " + std::to_string(gpu) + " (MODEL.DEVICE cuda)");
  return true;
}

}  // namespace detkit::distributed
