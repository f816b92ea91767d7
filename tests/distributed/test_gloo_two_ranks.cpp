// Two real ranks over Gloo on 127.0.0.1: the test starts two copies of this binary (each runs
// GlooWorker.TwoRanksTrainLikeOneProcess with torchrun's variables set) on a free port and waits
// for both, with a time-out. Each worker checks the collectives, the gradient averaging (a
// parameter with a gradient on one rank only, one with none), SyncBN and precise BN's statistics
// over the ranks, and that two ranks training a toy model from different initial weights on
// different batches end with exactly the weights of one process training on both batches at once.
#include <ATen/CPUGeneratorImpl.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <torch/nn/modules/linear.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "detkit/config/defaults.h"
#include "detkit/distributed/launch_environment.h"
#include "detkit/distributed/process_group_communicator.h"
#include "detkit/engine/amp_trainer.h"
#include "detkit/engine/precise_bn.h"
#include "detkit/engine/trainer.h"
#include "detkit/layers/conv2d.h"
#include "detkit/layers/sync_batch_norm.h"
#include "detkit/solver/build.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "tests/support/free_port.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace detkit::distributed {
namespace {

using testing::free_port;

class Toy : public modeling::MetaArch {
 public:
  Toy() : fc_(register_module("fc", torch::nn::Linear(3, 2))) {}
  structures::LossDict losses(const std::vector<structures::ModelInput>& batch) override {
    at::Tensor loss = at::zeros({});
    for (const auto& input : batch) {
      const at::Tensor out = fc_->forward(input.image.mean({1, 2}).unsqueeze(0)).squeeze(0);
      loss = loss + (out - at::tensor({1.0f, -1.0f})).pow(2).sum();
    }
    return {{"loss_toy", loss / static_cast<double>(batch.size())}};
  }
  std::vector<structures::Instances> inference(
      const std::vector<structures::ModelInput>& batch) override {
    return std::vector<structures::Instances>(batch.size(), structures::Instances(1, 1));
  }

 private:
  torch::nn::Linear fc_;
};

// Image k of rank r at iteration i: the same values wherever it is made.
structures::ModelInput sample(int rank, int64_t iter, int k) {
  auto gen = at::detail::createCPUGenerator(1000 * rank + 10 * iter + k);
  structures::ModelInput input;
  input.image = at::rand({3, 4, 4}, gen);
  input.height = input.width = 4;
  return input;
}

// Trains `model` for 3 iterations on batches from `ranks` (2 images of each); returns fc.weight.
at::Tensor train(const std::shared_ptr<Toy>& model, const std::vector<int>& ranks) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"SOLVER.BASE_LR", "0.1", "SOLVER.MOMENTUM", "0.9", "SOLVER.WEIGHT_DECAY",
                       "0.001"});
  auto optimizer = solver::build_optimizer(cfg, *model);
  int64_t iter = 0;
  engine::Trainer trainer(
      model, *optimizer,
      [&] {
        std::vector<structures::ModelInput> batch;
        for (int r : ranks)
          for (int k = 0; k < 2; ++k) batch.push_back(sample(r, iter, k));
        ++iter;
        return batch;
      },
      1);
  trainer.train(0, 3);
  return model->named_parameters()["fc.weight"].detach().clone();
}

TEST(GlooWorker, TwoRanksTrainLikeOneProcess) {
  if (!std::getenv("DETKIT_GLOO_WORKER"))
    GTEST_SKIP() << "one rank of GlooTwoRanks.TrainLikeOneProcess; runs only when it starts it";
  ASSERT_TRUE(init_from_environment());
  const int rank = get_rank();
  ASSERT_EQ(get_world_size(), 2);

  std::vector<at::Tensor> t = {at::full({3}, rank + 1.0f)};
  communicator().all_reduce_sum(t);
  EXPECT_TRUE(t[0].equal(at::full({3}, 3.0f)));
  t = {at::full({2}, 10.0f * rank)};
  communicator().broadcast(t, 0);
  EXPECT_TRUE(t[0].equal(at::zeros({2})));
  const auto gathered = communicator().all_gather(at::full({2}, rank + 5.0f));
  ASSERT_EQ(gathered.size(), 2u);
  EXPECT_TRUE(gathered[0].equal(at::full({2}, 5.0f)));
  EXPECT_TRUE(gathered[1].equal(at::full({2}, 6.0f)));
  // Bytes of different lengths on each rank (rank 1's empty), in rank order on both.
  const auto bytes = all_gather_bytes(rank == 0 ? std::string("rank zero\0!", 11) : std::string());
  EXPECT_EQ(bytes, (std::vector<std::string>{std::string("rank zero\0!", 11), ""}));
  synchronize();

  // Gradient averaging: the mean over the ranks.
  std::vector<at::Tensor> params = {at::zeros({2}).requires_grad_(), at::zeros({3}).requires_grad_()};
  params[0].mutable_grad() = at::full({2}, rank == 0 ? 1.0f : 3.0f);
  params[1].mutable_grad() = at::full({3}, rank == 0 ? -4.0f : 0.0f);
  average_gradients(params, {"a", "b"});
  EXPECT_TRUE(params[0].grad().equal(at::full({2}, 2.0f)));
  EXPECT_TRUE(params[1].grad().equal(at::full({3}, -2.0f)));
  {  // bfloat16 gradients (O2's) travel and are averaged in fp32 (Gloo has no bfloat16).
    std::vector<at::Tensor> low = {at::zeros({4}, at::kBFloat16).requires_grad_()};
    low[0].mutable_grad() = at::full({4}, rank == 0 ? 1.0f : 2.0f).to(at::kBFloat16);
    average_gradients(low, {"bf16"});
    EXPECT_EQ(low[0].grad().scalar_type(), at::kBFloat16);
    EXPECT_TRUE(low[0].grad().equal(at::full({4}, 1.5f, at::kBFloat16))) << low[0].grad();
  }
  // A parameter without a gradient on rank 1: both ranks stop, naming it and the rank.
  if (rank == 1) params[1].mutable_grad() = at::Tensor();
  try {
    average_gradients(params, {"a", "b"});
    ADD_FAILURE() << "rank " << rank << " averaged without b's gradient on rank 1";
  } catch (const Error& e) {
    std::cout << "[ gloo ] rank " << rank << ": " << e.what() << "\n";
    EXPECT_EQ(std::string(e.what()).rfind("parameter b got no gradient on rank 1 of 2: ", 0), 0u)
        << e.what();
  }

  {  // SyncBN over 2 ranks x 1 image is BN over the 2 images: outputs and gradients.
    auto gen = at::detail::createCPUGenerator(11);
    const at::Tensor both = at::randn({2, 3, 4, 5}, gen) * 3 + 2, weights = at::randn({2, 3, 4, 5}, gen);
    torch::nn::BatchNorm2d bn(3);
    const at::Tensor x_ref = both.clone().requires_grad_();
    const at::Tensor y_ref = bn->forward(x_ref);
    ((y_ref * weights).sum() / 2).backward();  // the mean over the ranks of each rank's loss
    layers::NaiveSyncBatchNorm2d sync(3);
    const at::Tensor x = both.narrow(0, rank, 1).clone().requires_grad_();
    const at::Tensor y = sync->forward(x);
    (y * weights.narrow(0, rank, 1)).sum().backward();
    average_gradients(sync->parameters(), {"weight", "bias"});
    const double forward = (y - y_ref.narrow(0, rank, 1)).abs().max().item<double>();
    // A rank's input gradient is that of the sum of the ranks' losses: half of it is the mean's.
    const double input = (x.grad() / 2 - x_ref.grad().narrow(0, rank, 1)).abs().max().item<double>();
    const double params = std::max((sync->weight.grad() - bn->weight.grad()).abs().max().item<double>(),
                                   (sync->bias.grad() - bn->bias.grad()).abs().max().item<double>());
    std::cout << "[ gloo ] rank " << rank << ": SyncBN vs BN over both images: max |output| diff "
              << forward << ", |input grad| " << input << ", |weight, bias grad| " << params << "\n";
    EXPECT_LT(forward, 1e-5);
    EXPECT_LT(input, 1e-5);
    EXPECT_LT(params, 1e-5);
    EXPECT_LT((sync->running_mean - bn->running_mean).abs().max().item<double>(), 1e-6);
  }

  {  // Precise BN: SyncBN's statistics are those of both ranks' images of every batch, the same
     // on both ranks; plain BN's are this rank's images' own. 1x1 identity convolutions, so each
     // norm normalises the images themselves; batches of two shapes, one image per rank.
    struct Net : torch::nn::Module {
      layers::Conv2d sync = register_module(
          "sync", layers::Conv2d(layers::Conv2dOptions(3, 3, 1).bias(false).norm("SyncBN")));
      layers::Conv2d bn = register_module(
          "bn", layers::Conv2d(layers::Conv2dOptions(3, 3, 1).bias(false).norm("BN")));
    } net;
    {
      at::NoGradGuard no_grad;
      net.sync->weight().copy_(at::eye(3).view({3, 3, 1, 1}));
      net.bn->weight().copy_(at::eye(3).view({3, 3, 1, 1}));
    }
    auto gen = at::detail::createCPUGenerator(5);
    const std::vector<at::Tensor> batches = {at::randn({2, 3, 2, 3}, gen) + 1,
                                             at::randn({2, 3, 4, 2}, gen) * 2 - 1};
    engine::update_bn_stats(
        net,
        [&](int64_t k) {
          const at::Tensor mine = batches.at(static_cast<size_t>(k)).narrow(0, rank, 1);
          net.bn->forward(net.sync->forward(mine));
        },
        2);
    const auto values = [](const std::vector<at::Tensor>& xs) {  // (C, everything)
      std::vector<at::Tensor> flat;
      for (const at::Tensor& x : xs) flat.push_back(x.transpose(0, 1).reshape({3, -1}));
      return at::cat(flat, 1);
    };
    const at::Tensor both = values(batches);
    const at::Tensor sync_input =
        values({batches[0].narrow(0, rank, 1), batches[1].narrow(0, rank, 1)});
    // bn's input is sync's output, normalised with each batch's global statistics.
    std::vector<at::Tensor> normalised;
    for (const at::Tensor& x : batches) {
      const at::Tensor v = values({x});
      const at::Tensor y =
          (x - v.mean(1).view({1, 3, 1, 1})) / at::sqrt(v.var(1, false).view({1, 3, 1, 1}) + 1e-5);
      normalised.push_back(y.narrow(0, rank, 1));
    }
    const at::Tensor bn_input = values(normalised);
    auto buffers = net.named_buffers();
    const auto diff = [](const at::Tensor& a, const at::Tensor& b) {
      return (a - b).abs().max().item<double>();
    };
    const double sync_diff = std::max(diff(buffers["sync.norm.running_mean"], both.mean(1)),
                                      diff(buffers["sync.norm.running_var"], both.var(1, false)));
    const double bn_diff = std::max(diff(buffers["bn.norm.running_mean"], bn_input.mean(1)),
                                    diff(buffers["bn.norm.running_var"], bn_input.var(1, false)));
    std::cout << "[ gloo ] rank " << rank << ": precise BN, SyncBN vs both ranks' images: max "
              << "difference " << sync_diff << "; BN vs this rank's: " << bn_diff << "\n";
    EXPECT_LT(sync_diff, 1e-5);
    EXPECT_LT(bn_diff, 1e-5);
    EXPECT_GT(diff(both.var(1, false), sync_input.var(1, false)), 1e-2)
        << "this rank's images alone would pass for both ranks'";
  }

  // Different initial weights on each rank: broadcast_from_main makes them rank 0's.
  torch::manual_seed(rank);
  auto model = std::make_shared<Toy>();
  std::vector<at::Tensor> state;
  for (const auto& p : model->parameters()) state.push_back(p);
  broadcast_from_main(state);
  torch::manual_seed(0);
  auto reference = std::make_shared<Toy>();  // rank 0's initial weights
  EXPECT_TRUE(model->named_parameters()["fc.weight"].equal(reference->named_parameters()["fc.weight"]));

  {  // data_time is the slowest rank's: rank 1 waits 300 ms for its batch, rank 0 not at all.
    config::CfgNode cfg = config::get_cfg();
    auto copy = std::make_shared<Toy>();
    auto optimizer = solver::build_optimizer(cfg, *copy);
    engine::Trainer trainer(
        copy, *optimizer,
        [&] {
          if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
          return std::vector{sample(rank, 0, 0)};
        },
        1);
    trainer.train(0, 1);
    const double data_time = trainer.storage().latest("data_time").first;
    std::cout << "[ gloo ] rank " << rank << ": data_time " << data_time << " s\n";
    EXPECT_GE(data_time, 0.3);
  }

  const at::Tensor two_ranks = train(model, {rank});
  const at::Tensor one_process = train(reference, {0, 1});
  const double diff = (two_ranks - one_process).abs().max().item<double>();
  std::cout << "[ gloo ] rank " << rank << ": max |weight difference| to one process " << diff
            << "\n";
  EXPECT_LT(diff, 1e-6);

  {  // Mixed precision: a gradient that overflows on rank 1 alone skips the step on both ranks
     // (the averaged gradients are inf on both), and both halve the scale.
    auto amp_model = std::make_shared<Toy>();
    std::vector<at::Tensor> start;
    for (const auto& p : amp_model->parameters()) start.push_back(p);
    broadcast_from_main(start);
    auto optimizer = solver::build_optimizer(config::get_cfg(), *amp_model);
    solver::GradScaler scaler;
    int64_t iter = 0;
    engine::AMPTrainer trainer(
        amp_model, *optimizer,
        [&] {
          structures::ModelInput input = sample(rank, iter, 0);
          // A finite loss (~1e34) whose gradient, times the scale 65536, is past float's range.
          if (rank == 1 && iter == 1) input.image.fill_(1e17f);
          ++iter;
          return std::vector{input};
        },
        1, scaler);
    trainer.train(0, 1);
    const at::Tensor trained = amp_model->named_parameters()["fc.weight"].detach().clone();
    trainer.train(1, 2);
    std::cout << "[ gloo ] rank " << rank << ": AMP skipped " << trainer.skipped_steps()
              << " step(s), scale " << scaler.scale() << "\n";
    EXPECT_EQ(trainer.skipped_steps(), 1);
    EXPECT_EQ(scaler.scale(), 32768.0);
    EXPECT_TRUE(amp_model->named_parameters()["fc.weight"].equal(trained));
    const auto both = communicator().all_gather(trained);
    EXPECT_TRUE(both[0].equal(both[1]));
  }

  // A NaN loss on rank 1 at iteration 1 stops both ranks there, with the same message.
  config::CfgNode cfg = config::get_cfg();
  auto optimizer = solver::build_optimizer(cfg, *model);
  int64_t iter = 0;
  engine::Trainer trainer(
      model, *optimizer,
      [&] {
        structures::ModelInput input = sample(rank, iter, 0);
        if (rank == 1 && iter == 1) input.image.fill_(std::numeric_limits<float>::quiet_NaN());
        ++iter;
        return std::vector{input};
      },
      1);
  try {
    trainer.train(0, 3);
    ADD_FAILURE() << "rank " << rank << " trained past a NaN loss on rank 1";
  } catch (const Error& e) {
    std::cout << "[ gloo ] rank " << rank << ": " << e.what() << "\n";
    EXPECT_EQ(std::string(e.what()).rfind("iteration 1: loss became infinite or NaN on rank 1", 0), 0u)
        << e.what();
  }
  synchronize();

  {  // A collective that stalls: rank 1 of a second job (2 s time-out) skips a barrier.
    Rendezvous r;
    r.master_port = std::atoi(std::getenv("DETKIT_GLOO_PORT2"));
    r.timeout = std::chrono::seconds(2);
    ProcessGroupCommunicator second({rank, 2, rank, 2}, r);
    if (rank == 0) {
      const auto start = std::chrono::steady_clock::now();
      try {
        second.barrier();
        ADD_FAILURE() << "a barrier that rank 1 never entered returned";
      } catch (const Error& e) {
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::cout << "[ gloo ] rank 0 after " << waited << " s: " << std::string(e.what()).substr(0, 160) << "\n";
        EXPECT_EQ(std::string(e.what()).rfind("rank 0 of 2 at 127.0.0.1:" + std::to_string(r.master_port) +
                                                  ": barrier failed: ",
                                              0),
                  0u)
            << e.what();
        EXPECT_LT(waited, 30.0);
      }
    } else {
      std::this_thread::sleep_for(std::chrono::seconds(4));
    }
  }
  synchronize();
}

// Starts this binary as one rank; returns its pid.
pid_t start_rank(int rank, int port, int port2, const std::string& log) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  for (const std::string& v : std::vector<std::string>{"DETKIT_GLOO_WORKER=1", "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
        "MASTER_PORT=" + std::to_string(port), "RANK=" + std::to_string(rank),
        "LOCAL_RANK=" + std::to_string(rank), "OMP_NUM_THREADS=1",
        "DETKIT_GLOO_PORT2=" + std::to_string(port2)})
    env.push_back(v);
  std::vector<char*> envp;
  for (auto& v : env) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", filter = "--gtest_filter=GlooWorker.TwoRanksTrainLikeOneProcess";
  char* argv[] = {exe.data(), filter.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

TEST(GlooTwoRanks, TrainLikeOneProcess) {
  testing::TempDir dir("gloo_two_ranks");
  const int port = free_port(), port2 = free_port();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 2; ++rank) {
    pids.push_back(start_rank(rank, port, port2, dir.path("rank" + std::to_string(rank) + ".log")));
    ASSERT_GT(pids.back(), 0);
  }
  std::vector<int> status(2, -1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int running = 2;
  while (running > 0 && std::chrono::steady_clock::now() < deadline) {
    for (int r = 0; r < 2; ++r) {
      int st = 0;
      if (status[r] == -1 && waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        --running;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (int r = 0; r < 2; ++r) {
    if (status[r] == -1) {  // hung: stop it, and say so
      kill(pids[r], SIGKILL);
      waitpid(pids[r], nullptr, 0);
    }
    const std::string log = read_file(dir.path("rank" + std::to_string(r) + ".log"));
    // What the worker measured and the error it stopped with.
    for (size_t at = log.find("[ gloo ]"); at != std::string::npos; at = log.find("[ gloo ]", at + 1))
      std::cout << log.substr(at, log.find('\n', at) - at) << "\n";
    EXPECT_EQ(status[r], 0) << "rank " << r << (status[r] == -1 ? " did not finish in 120 s" : "")
                            << "; its output:\n"
                            << log;
  }
}

TEST(GlooTwoRanks, ARankWhoseMasterNeverComesIsNamed) {
  const int port = free_port();
  Rendezvous r;
  r.master_port = port;
  r.timeout = std::chrono::seconds(2);
  try {
    ProcessGroupCommunicator comm({1, 2, 1, 2}, r);
    ADD_FAILURE() << "joined a job whose rank 0 never started";
  } catch (const Error& e) {
    const std::string message = e.what();
    std::cout << "[ gloo ] " << message.substr(0, 200) << "\n";
    EXPECT_EQ(message.rfind("rank 1 of 2 at 127.0.0.1:" + std::to_string(port) +
                                ": could not join the job: the master did not answer within 2 s "
                                "(--dist-timeout)",
                            0),
              0u)
        << message;
  }
}

TEST(GlooTwoRanks, AMasterWhosePeerNeverComesSaysHowManyArrived) {
  const int port = free_port();
  Rendezvous r;
  r.master_port = port;
  r.timeout = std::chrono::seconds(2);
  const auto start = std::chrono::steady_clock::now();
  try {
    ProcessGroupCommunicator comm({0, 2, 0, 2}, r);
    ADD_FAILURE() << "rank 0 formed a job of 2 alone";
  } catch (const Error& e) {
    const std::string message = e.what();
    std::cout << "[ gloo ] " << message << "\n";
    EXPECT_EQ(message, "rank 0 of 2 at 127.0.0.1:" + std::to_string(port) +
                           ": 1 of 2 ranks arrived within 2 s (--dist-timeout); the others did "
                           "not start or cannot reach this address");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(GlooTwoRanks, LaunchVariablesAreNamedWhenMissing) {
  struct Env {
    const char* name;
    std::optional<std::string> saved;
  };
  std::vector<Env> vars = {{"WORLD_SIZE", {}}, {"RANK", {}}, {"MASTER_ADDR", {}}, {"MASTER_PORT", {}}};
  for (auto& v : vars) {
    if (const char* s = std::getenv(v.name)) v.saved = s;
    unsetenv(v.name);
  }
  EXPECT_FALSE(init_from_environment());  // no WORLD_SIZE: one process
  setenv("WORLD_SIZE", "2", 1);
  auto message = [] {
    try {
      init_from_environment();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(), "distributed launch: environment variable RANK is not set");
  setenv("RANK", "one", 1);
  EXPECT_EQ(message(), "distributed launch: RANK='one' is not a non-negative integer");
  setenv("RANK", "1", 1);
  EXPECT_EQ(message(), "distributed launch: environment variable MASTER_ADDR is not set");
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  EXPECT_EQ(message(), "distributed launch: environment variable MASTER_PORT is not set");
  setenv("RANK", "2", 1);
  setenv("MASTER_PORT", "1", 1);
  EXPECT_EQ(message(), "rank 2 is outside a world of 2");
  for (auto& v : vars) {
    if (v.saved)
      setenv(v.name, v.saved->c_str(), 1);
    else
      unsetenv(v.name);
  }
  EXPECT_EQ(get_world_size(), 1);
}

}  // namespace
}  // namespace detkit::distributed
