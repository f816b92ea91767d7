#pragma once
// The job an external launcher describes in the environment: torchrun's variables (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) — which `detkit train
// --num-gpus` sets for its workers too — or, without them, a SLURM step started by srun
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the tasks per node and the first host of the
// node list).
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "detkit/distributed/comm.h"
#include "detkit/distributed/process_group_communicator.h"

namespace detkit::distributed {

struct LaunchedJob {
  Topology topology;
  Rendezvous rendezvous;
  std::string launcher;  // "torchrun" (any launcher setting its variables) or "slurm"
};

/// Looks a variable up: nullptr when unset (std::getenv's contract).
using Getenv = std::function<const char*(const char*)>;

/// The job described by the environment; nullopt when it describes none of several ranks
/// (WORLD_SIZE unset or 1, and no srun step of several tasks). A missing or malformed variable
/// is a detkit::Error naming it. Under SLURM, MASTER_ADDR and MASTER_PORT win when set;
/// otherwise the master is the node list's first host and the port 20000 + SLURM_JOB_ID mod
/// 20000 (so that jobs sharing a node do not collide), or 29500 without a job id.
std::optional<LaunchedJob> job_from_environment(const Getenv& getenv);

/// Joins the job the environment describes (see job_from_environment) and installs its
/// communicator, waiting at most `timeout` for the rendezvous and for any one collective;
/// returns false, changing nothing, when the environment describes no job of several ranks.
bool init_from_environment(std::chrono::milliseconds timeout = std::chrono::minutes(30));

/// The first host of a SLURM node list, compressed or not: "node[03-05,09]" -> "node03",
/// "a1,b2" -> "a1", "rack[1-2]-gpu[07-08]" -> "rack1-gpu07". An empty or unbalanced list is a
/// detkit::Error quoting it.
std::string first_host(const std::string& nodelist);

/// The tasks on the first node from SLURM's tasks-per-node form: "4(x2),3" -> 4, "2" -> 2.
int first_node_tasks(const std::string& tasks_per_node);

}  // namespace detkit::distributed
