// What `detkit train --num-gpus N` gives its workers: the rendezvous from --dist-url, the global
// ranks over machines (Detectron2's machine_rank × N + local rank) and the threads per worker;
// the flags' errors name the flag.
#include "detkit/distributed/launcher.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "detkit/utils/error.h"

namespace detkit::distributed {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Launcher, DistUrl) {
  const MasterAddress a = resolve_dist_url("auto", 1);
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_GT(a.port, 0);
  const MasterAddress t = resolve_dist_url("tcp://10.0.0.2:29500", 2);
  EXPECT_EQ(t.host, "10.0.0.2");
  EXPECT_EQ(t.port, 29500);
  EXPECT_EQ(resolve_dist_url("tcp://[::1]:1234", 1).host, "::1");
  EXPECT_EQ(error_of([] { resolve_dist_url("auto", 2); }),
            "--dist-url auto works on one machine only; give every machine machine 0's "
            "tcp://HOST:PORT");
  EXPECT_EQ(error_of([] { resolve_dist_url("10.0.0.2:29500", 1); }),
            "--dist-url '10.0.0.2:29500': not a tcp:// address (expected auto or tcp://HOST:PORT)");
  EXPECT_EQ(error_of([] { resolve_dist_url("tcp://host", 1); }),
            "--dist-url 'tcp://host': no port (expected auto or tcp://HOST:PORT)");
  EXPECT_EQ(error_of([] { resolve_dist_url("tcp://host:99999", 1); }),
            "--dist-url 'tcp://host:99999': the port must be a number in 1..65535 (expected auto "
            "or tcp://HOST:PORT)");
  EXPECT_EQ(error_of([] { resolve_dist_url("tcp://:80", 1); }),
            "--dist-url 'tcp://:80': no host (expected auto or tcp://HOST:PORT)");
}

TEST(Launcher, WorkerVariablesGiveGlobalRanks) {
  unsetenv("DETKIT_NUM_THREADS");
  LaunchOptions o;
  o.num_processes = 4;
  o.num_machines = 2;
  o.machine_rank = 1;
  const auto vars = worker_variables(o, {"10.0.0.2", 29500}, 3, 2);
  EXPECT_EQ(vars, (std::vector<std::string>{"RANK=7", "WORLD_SIZE=8", "LOCAL_RANK=3",
                                            "LOCAL_WORLD_SIZE=4", "MASTER_ADDR=10.0.0.2",
                                            "MASTER_PORT=29500", "DETKIT_LAUNCHED=1",
                                            "DETKIT_NUM_THREADS=2"}));
  // The user's DETKIT_NUM_THREADS stays.
  setenv("DETKIT_NUM_THREADS", "3", 1);
  const auto kept = worker_variables(o, {"h", 1}, 0, 2);
  unsetenv("DETKIT_NUM_THREADS");
  EXPECT_EQ(kept.back(), "DETKIT_LAUNCHED=1");
}

TEST(Launcher, OptionErrorsNameTheFlag) {
  LaunchOptions o;
  o.num_processes = 0;
  EXPECT_EQ(error_of([&] { check_launch_options(o); }), "--num-gpus must be at least 1, got 0");
  o = {};
  o.num_machines = 2;
  o.machine_rank = 2;
  EXPECT_EQ(error_of([&] { check_launch_options(o); }),
            "--machine-rank 2 is outside 0..1 (--num-machines 2)");
  o = {};
  o.num_machines = 0;
  EXPECT_EQ(error_of([&] { check_launch_options(o); }), "--num-machines must be at least 1, got 0");
  o = {};
  o.timeout = std::chrono::seconds(0);
  EXPECT_EQ(error_of([&] { check_launch_options(o); }),
            "--dist-timeout must be at least 1 second, got 0");
  o = {};
  EXPECT_EQ(error_of([&] { check_launch_options(o); }), "no error");
}

TEST(Launcher, ReadsItsOwnCommandLine) {
  const auto args = own_command_line();
  ASSERT_FALSE(args.empty());
  EXPECT_NE(args[0].find("test_distributed"), std::string::npos) << args[0];
}

}  // namespace
}  // namespace detkit::distributed
