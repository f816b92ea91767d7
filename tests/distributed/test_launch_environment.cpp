// Joining from a launcher's environment: torchrun's variables, a SLURM srun step (node lists in
// their compressed forms, tasks per node, the master port from the job id), and named errors.
#include "detkit/distributed/launch_environment.h"

#include <gtest/gtest.h>

#include <map>

#include "detkit/utils/error.h"

namespace detkit::distributed {
namespace {

using Env = std::map<std::string, std::string>;

std::optional<LaunchedJob> job(const Env& env) {
  return job_from_environment([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

std::string error_of(const Env& env) {
  try {
    job(env);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(LaunchEnvironment, NoLauncherMeansOneProcess) {
  EXPECT_FALSE(job({}));
  EXPECT_FALSE(job({{"WORLD_SIZE", "1"}, {"RANK", "0"}}));
  // A batch script's own shell has SLURM_NTASKS but is no srun step.
  EXPECT_FALSE(job({{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "0"}, {"SLURM_JOB_NODELIST", "n1"}}));
  EXPECT_FALSE(job({{"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_PROCID", "0"}}));
}

TEST(LaunchEnvironment, TorchrunVariables) {
  auto j = job({{"WORLD_SIZE", "4"}, {"RANK", "3"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29400"}});
  ASSERT_TRUE(j);
  EXPECT_EQ(j->launcher, "torchrun");
  EXPECT_EQ(j->topology.rank, 3);
  EXPECT_EQ(j->topology.world_size, 4);
  EXPECT_EQ(j->topology.local_rank, 1);
  EXPECT_EQ(j->topology.local_world_size, 2);
  EXPECT_EQ(j->rendezvous.master_addr, "10.0.0.7");
  EXPECT_EQ(j->rendezvous.master_port, 29400);
  // LOCAL_* default to one machine.
  j = job({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  ASSERT_TRUE(j);
  EXPECT_EQ(j->topology.local_rank, 1);
  EXPECT_EQ(j->topology.local_world_size, 2);
}

TEST(LaunchEnvironment, TorchrunErrorsNameTheVariable) {
  EXPECT_EQ(error_of({{"WORLD_SIZE", "2"}}),
            "distributed launch: environment variable RANK is not set");
  EXPECT_EQ(error_of({{"WORLD_SIZE", "two"}}),
            "distributed launch: WORLD_SIZE='two' is not a non-negative integer");
  EXPECT_EQ(error_of({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_PORT", "1"}}),
            "distributed launch: environment variable MASTER_ADDR is not set");
  EXPECT_EQ(error_of({{"WORLD_SIZE", "2"}, {"RANK", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}),
            "rank 2 is outside a world of 2");
}

Env slurm(Env extra) {
  Env env = {{"SLURM_STEP_ID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_PROCID", "5"},
             {"SLURM_LOCALID", "1"}, {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
             {"SLURM_JOB_NODELIST", "node[03-04]"}, {"SLURM_JOB_ID", "123456"}};
  for (auto& [k, v] : extra) env[k] = v;
  return env;
}

TEST(LaunchEnvironment, SlurmStep) {
  auto j = job(slurm({}));
  ASSERT_TRUE(j);
  EXPECT_EQ(j->launcher, "slurm");
  EXPECT_EQ(j->topology.rank, 5);
  EXPECT_EQ(j->topology.world_size, 8);
  EXPECT_EQ(j->topology.local_rank, 1);
  EXPECT_EQ(j->topology.local_world_size, 4);
  EXPECT_EQ(j->rendezvous.master_addr, "node03");
  EXPECT_EQ(j->rendezvous.master_port, 20000 + 123456 % 20000);
  // MASTER_ADDR / MASTER_PORT win; without a job id the port is torchrun's default.
  j = job(slurm({{"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "3456"}}));
  EXPECT_EQ(j->rendezvous.master_addr, "10.1.2.3");
  EXPECT_EQ(j->rendezvous.master_port, 3456);
  Env no_id = slurm({});
  no_id.erase("SLURM_JOB_ID");
  EXPECT_EQ(job(no_id)->rendezvous.master_port, 29500);
  // The job's tasks per node when the step's are not given.
  Env job_level = slurm({{"SLURM_TASKS_PER_NODE", "2(x4)"}});
  job_level.erase("SLURM_STEP_TASKS_PER_NODE");
  EXPECT_EQ(job(job_level)->topology.local_world_size, 2);
}

TEST(LaunchEnvironment, SlurmErrorsNameTheVariable) {
  Env env = slurm({});
  env.erase("SLURM_LOCALID");
  EXPECT_EQ(error_of(env), "distributed launch: environment variable SLURM_LOCALID is not set");
  env = slurm({});
  env.erase("SLURM_JOB_NODELIST");
  EXPECT_EQ(error_of(env),
            "distributed launch: environment variable SLURM_JOB_NODELIST is not set (nor "
            "MASTER_ADDR)");
  EXPECT_EQ(error_of(slurm({{"SLURM_STEP_TASKS_PER_NODE", "3"}})),
            "rank 5: local world size 3 does not divide the world size 8");
  EXPECT_EQ(error_of(slurm({{"SLURM_JOB_NODELIST", "node[03-04"}})),
            "SLURM node list 'node[03-04': '[' without ']'");
}

TEST(LaunchEnvironment, FirstHostOfANodeList) {
  EXPECT_EQ(first_host("node[03-05,09]"), "node03");
  EXPECT_EQ(first_host("node[09,03-05]"), "node09");
  EXPECT_EQ(first_host("gpu17"), "gpu17");
  EXPECT_EQ(first_host("a1,b[2-3]"), "a1");
  EXPECT_EQ(first_host("rack[1-2]-gpu[007-008]"), "rack1-gpu007");
  EXPECT_EQ(first_host("n[5]"), "n5");
  for (const char* bad : {"", "[1-2]x]", "node[]", "node[a-b]", ",n1"}) {
    try {
      first_host(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string("SLURM node list '") + bad + "'", 0), 0u)
          << e.what();
    }
  }
}

TEST(LaunchEnvironment, TasksOnTheFirstNode) {
  EXPECT_EQ(first_node_tasks("4(x2),3"), 4);
  EXPECT_EQ(first_node_tasks("2"), 2);
  EXPECT_EQ(first_node_tasks("8(x16)"), 8);
  EXPECT_THROW(first_node_tasks("(x2)"), Error);
  EXPECT_THROW(first_node_tasks("0"), Error);
}

}  // namespace
}  // namespace detkit::distributed
