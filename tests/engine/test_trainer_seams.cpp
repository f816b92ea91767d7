// The seams of training: a second meta-architecture registered by name trains with the unchanged
// Trainer, a phase is replaced by overriding it, and an exception inside a step (a TORCH_CHECK of
// an op included) reaches the caller with the iteration named.
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/cuda.h>
#include <torch/nn/modules/linear.h>

#include "detkit/checkpoint/checkpointer.h"
#include "detkit/config/defaults.h"
#include "detkit/engine/hooks.h"
#include "detkit/engine/trainer.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/solver/build.h"
#include "detkit/utils/error.h"
#include "detkit/utils/stop_signal.h"
#include "tests/support/scoped_rank.h"
#include "tests/support/temp_dir.h"

namespace detkit::engine {
namespace {

// A toy "detector": one linear layer from the image's channel means to a score, trained towards
// the number of ground-truth boxes. Enough to prove the trainer needs nothing of R-CNN.
class ToyDetector : public modeling::MetaArch {
 public:
  ToyDetector() : fc_(register_module("fc", torch::nn::Linear(3, 1))) {}

  structures::LossDict losses(const std::vector<structures::ModelInput>& batch) override {
    at::Tensor loss = at::zeros({});
    for (const auto& input : batch) {
      TORCH_CHECK(input.image.dim() == 3, "ToyDetector: image must be (C, H, W), got ",
                  input.image.sizes());
      const at::Tensor score = fc_->forward(input.image.mean({1, 2}).unsqueeze(0)).squeeze();
      loss = loss + (score - static_cast<double>(input.instances->size())).pow(2);
    }
    return {{"loss_toy", loss / static_cast<double>(batch.size())}};
  }
  std::vector<structures::Instances> inference(
      const std::vector<structures::ModelInput>& batch) override {
    std::vector<structures::Instances> out;
    for (const auto& input : batch) out.emplace_back(input.height, input.width);
    return out;
  }

 private:
  torch::nn::Linear fc_;
};

DETKIT_REGISTER_META_ARCH(ToyDetector,
                          [](const config::CfgNode&) { return std::make_shared<ToyDetector>(); });

config::CfgNode toy_config() {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"MODEL.META_ARCHITECTURE", "ToyDetector", "SOLVER.BASE_LR", "0.1"});
  return cfg;
}

structures::ModelInput toy_input(int64_t boxes) {
  structures::ModelInput input;
  input.image = at::rand({3, 8, 8});
  input.height = input.width = 8;
  input.instances = structures::Instances(8, 8);
  input.instances->set("gt_boxes", structures::Boxes(at::zeros({boxes, 4})));
  return input;
}

TEST(TrainerSeams, ASecondMetaArchitectureTrainsThroughTheRegistry) {
  const config::CfgNode cfg = toy_config();
  std::shared_ptr<modeling::MetaArch> model = modeling::build_model(cfg);
  ASSERT_NE(dynamic_cast<ToyDetector*>(model.get()), nullptr);
  EXPECT_TRUE(model->device().is_cpu());
  auto optimizer = solver::build_optimizer(cfg, *model);
  const at::Tensor before = model->named_parameters()["fc.weight"].detach().clone();
  Trainer trainer(
      model, *optimizer,
      [] {
        return std::vector{toy_input(2), toy_input(3)};
      },
      1);
  trainer.train(0, 1);
  EXPECT_TRUE(trainer.storage().has("loss_toy"));
  EXPECT_TRUE(trainer.storage().has("total_loss"));
  EXPECT_FALSE(model->named_parameters()["fc.weight"].equal(before));
}

TEST(TrainerSeams, UnknownMetaArchitectureListsTheRegisteredOnes) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"MODEL.META_ARCHITECTURE", "ToyDetectr"});
  try {
    modeling::build_model(cfg);
    ADD_FAILURE() << "built an unknown meta architecture";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("MODEL.META_ARCHITECTURE"), std::string::npos) << message;
    EXPECT_NE(message.find("GeneralizedRCNN"), std::string::npos) << message;
    EXPECT_NE(message.find("did you mean 'ToyDetector'"), std::string::npos) << message;
  }
}

// A trainer variant replaces one phase (as mixed precision does when it skips a step).
class SkipEveryStep : public Trainer {
 public:
  using Trainer::Trainer;
  int skipped = 0;

 protected:
  void optimizer_step() override { ++skipped; }
};

TEST(TrainerSeams, APhaseIsReplacedByOverridingIt) {
  const config::CfgNode cfg = toy_config();
  auto model = modeling::build_model(cfg);
  auto optimizer = solver::build_optimizer(cfg, *model);
  const at::Tensor before = model->named_parameters()["fc.weight"].detach().clone();
  SkipEveryStep trainer(
      model, *optimizer, [] { return std::vector{toy_input(1)}; }, 1);
  trainer.train(0, 3);
  EXPECT_EQ(trainer.skipped, 3);
  EXPECT_TRUE(model->named_parameters()["fc.weight"].equal(before));
  EXPECT_TRUE(model->named_parameters()["fc.weight"].grad().defined());  // backward still ran
}

// The optimizer seam: a wrapper that decides whether each step happens (as a loss scaler skips
// a step on inf/NaN gradients), with the trainer, the LR schedule and the checkpoint state
// working through the interface.
class SkipOddSteps : public solver::Optimizer {
 public:
  explicit SkipOddSteps(solver::Optimizer& inner) : inner_(inner) {}
  bool step() override { return calls_++ % 2 == 0 ? inner_.step() : false; }
  void zero_grad(bool set_to_none) override { inner_.zero_grad(set_to_none); }
  size_t num_groups() const override { return inner_.num_groups(); }
  solver::OptimizerGroup& group(size_t g) override { return inner_.group(g); }
  c10::IValue state() const override { return inner_.state(); }
  void load_state(const c10::IValue& state) override { inner_.load_state(state); }

 private:
  solver::Optimizer& inner_;
  int64_t calls_ = 0;
};

class WeightsAfterEachStep : public HookBase {
 public:
  explicit WeightsAfterEachStep(std::vector<at::Tensor>& out) : out_(out) {}
  void after_step(Trainer& t) override {
    out_.push_back(t.model().named_parameters()["fc.weight"].detach().clone());
  }

 private:
  std::vector<at::Tensor>& out_;
};

TEST(TrainerSeams, AnOptimizerMaySkipAStep) {
  config::CfgNode cfg = toy_config();
  cfg.merge_from_list({"SOLVER.MAX_ITER", "4", "SOLVER.WARMUP_ITERS", "0", "SOLVER.STEPS", "(2,)"});
  auto model = modeling::build_model(cfg);
  auto sgd = solver::build_optimizer(cfg, *model);
  SkipOddSteps optimizer(*sgd);
  auto scheduler = solver::build_lr_scheduler(cfg, optimizer);
  const at::Tensor initial = model->named_parameters()["fc.weight"].detach().clone();
  std::vector<at::Tensor> weights;
  std::vector<double> lrs;
  Trainer trainer(
      model, optimizer, [] { return std::vector{toy_input(1)}; }, 1);
  trainer.register_hook(std::make_shared<WeightsAfterEachStep>(weights));
  trainer.register_hook(std::make_shared<LRSchedulerHook>(*scheduler));
  trainer.train(0, 4);

  EXPECT_EQ(trainer.skipped_steps(), 2);
  ASSERT_EQ(weights.size(), 4u);
  EXPECT_FALSE(weights[0].equal(initial));
  EXPECT_TRUE(weights[1].equal(weights[0]));  // skipped: nothing moved
  EXPECT_FALSE(weights[2].equal(weights[1]));
  EXPECT_TRUE(weights[3].equal(weights[2]));
  // The schedule runs on iterations, skipped or not (as Detectron2's with AMP).
  EXPECT_DOUBLE_EQ(optimizer.group(0).lr, 0.1 * 0.1);
  EXPECT_EQ(trainer.storage().latest("lr").first, 0.1 * 0.1);
  // The checkpoint entry of the wrapped SGD round-trips through the interface.
  const c10::IValue state = optimizer.state();
  auto fresh = solver::build_optimizer(cfg, *modeling::build_model(cfg));
  fresh->load_state(state);
  EXPECT_DOUBLE_EQ(fresh->group(0).lr, optimizer.group(0).lr);
}

// Raises `sig` in this process during iteration `at` (as a scheduler would), and counts the
// after_train calls.
class SignalAt : public HookBase {
 public:
  SignalAt(int64_t at, int sig) : at_(at), sig_(sig) {}
  void before_step(Trainer& t) override {
    if (t.iter() == at_) raise(sig_);
  }
  void after_train(Trainer&) override { ++after_train_calls; }
  int after_train_calls = 0;

 private:
  int64_t at_;
  int sig_;
};

TEST(TrainerSeams, AStopSignalEndsTrainingAfterItsStepWithACheckpoint) {
  config::CfgNode cfg = toy_config();
  cfg.merge_from_list({"SOLVER.MAX_ITER", "10", "SOLVER.WARMUP_ITERS", "0"});
  testing::TempDir dir("preemption_hook");
  auto model = modeling::build_model(cfg);
  auto optimizer = solver::build_optimizer(cfg, *model);
  auto scheduler = solver::build_lr_scheduler(cfg, *optimizer);
  checkpoint::Checkpointer checkpointer(model, dir.path("out"));
  std::vector<at::Tensor> weights;
  Trainer trainer(
      model, *optimizer, [] { return std::vector{toy_input(1)}; }, 1);
  auto signal = std::make_shared<SignalAt>(3, SIGTERM);
  auto preemption = std::make_shared<PreemptionHook>(checkpointer, *scheduler);
  trainer.register_hook(signal);
  trainer.register_hook(std::make_shared<WeightsAfterEachStep>(weights));
  trainer.register_hook(std::make_shared<LRSchedulerHook>(*scheduler));
  trainer.register_hook(preemption);
  {
    const StopSignalGuard guard;
    trainer.train(0, 10);
  }
  EXPECT_TRUE(trainer.stopped_early());
  EXPECT_EQ(trainer.iter(), 3) << "the step during which the signal came is finished";
  EXPECT_EQ(weights.size(), 4u);
  EXPECT_EQ(signal->after_train_calls, 1);
  EXPECT_EQ(preemption->stopped_by(), SIGTERM);
  EXPECT_EQ(checkpointer.last_checkpoint(), dir.path("out/model_0000003.pth"));
  const auto loaded = checkpointer.resume_or_load("", /*resume=*/true);
  EXPECT_EQ(loaded.iteration(), 3);
  EXPECT_TRUE(loaded.state.count("optimizer") && loaded.state.count("scheduler"));
  EXPECT_TRUE(model->named_parameters()["fc.weight"].equal(weights.back()));
}

TEST(TrainerSeams, AnOpErrorInsideAStepNamesTheIteration) {
  const config::CfgNode cfg = toy_config();
  auto model = modeling::build_model(cfg);
  auto optimizer = solver::build_optimizer(cfg, *model);
  int64_t calls = 0;
  Trainer trainer(
      model, *optimizer,
      [&calls] {
        auto input = toy_input(1);
        if (calls++ == 2) input.image = at::rand({3, 8});  // iteration 2 gets a bad image
        return std::vector{input};
      },
      1);
  try {
    trainer.train(0, 5);
    ADD_FAILURE() << "the bad image was accepted";
  } catch (const Error& e) {
    const std::string message = e.what();
    std::cout << "[ trainer ] " << message << "\n";
    EXPECT_EQ(message.rfind("iteration 2: ToyDetector: image must be (C, H, W), got [3, 8]", 0), 0u)
        << message;
    EXPECT_EQ(message.find("Exception raised from"), std::string::npos) << message;  // no backtrace
  }
}

// ToyDetector whose step runs out of memory, as libtorch's caching allocator reports it (a
// c10::OutOfMemoryError over several lines), on a batch holding an image 999 pixels high.
class OutOfMemoryDetector : public ToyDetector {
 public:
  structures::LossDict losses(const std::vector<structures::ModelInput>& batch) override {
    for (const auto& input : batch)
      TORCH_CHECK_WITH(OutOfMemoryError, input.image.size(1) != 999,
                       "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                       "capacity of 79.19 GiB\nIf reserved but unallocated memory is large ...");
    return ToyDetector::losses(batch);
  }
};

DETKIT_REGISTER_META_ARCH(OutOfMemoryDetector, [](const config::CfgNode&) {
  return std::make_shared<OutOfMemoryDetector>();
});

TEST(TrainerSeams, OutOfMemoryNamesTheIterationTheBatchAndTheDevice) {
  config::CfgNode cfg = toy_config();
  cfg.merge_from_list({"MODEL.META_ARCHITECTURE", "OutOfMemoryDetector"});
  auto model = modeling::build_model(cfg);
  auto optimizer = solver::build_optimizer(cfg, *model);
  int64_t calls = 0;
  Trainer trainer(
      model, *optimizer,
      [&calls] {
        auto big = toy_input(1);
        if (calls++ == 1) big.image = at::rand({3, 999, 8});  // iteration 1
        return std::vector{toy_input(2), big};
      },
      1);
  try {
    trainer.train(0, 4);
    ADD_FAILURE() << "the out-of-memory error was lost";
  } catch (const Error& e) {
    const std::string message = e.what();
    std::cout << "[ trainer ] " << message << "\n";
    EXPECT_EQ(
        message.rfind("iteration 1: out of memory on the batch of 2 image(s) 3x8x8, 3x999x8 (", 0),
        0u)
        << message;
    EXPECT_NE(message.find("CUDA out of memory. Tried to allocate 2.00 GiB"), std::string::npos);
    EXPECT_EQ(message.find("If reserved"), std::string::npos) << message;  // its first line only
    EXPECT_NE(message.find("the last checkpoint is intact"), std::string::npos) << message;
    EXPECT_NE(message.find(torch::cuda::is_available() ? "GPU " : "no GPU visible"),
              std::string::npos)
        << message;
  }
}

TEST(TrainerSeams, CudaInACpuBuildIsAnErrorNamingTheKey) {
  for (const char* device : {"cuda", "cuda:3", "tpu", "gpu"}) {
    config::CfgNode cfg = toy_config();
    cfg.merge_from_list({"MODEL.DEVICE", device});
    try {
      modeling::build_model(cfg);
      if (std::string(device).rfind("cuda", 0) == 0 && torch::cuda::is_available()) continue;
      ADD_FAILURE() << "built on " << device;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("MODEL.DEVICE '" + std::string(device) + "'"), std::string::npos)
          << message;
      EXPECT_NE(message.find("this build: "), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace detkit::engine

namespace detkit::engine {
namespace {

// DATALOADER.ON_BAD_IMAGE's count of replaced samples is the job's: in one process recorded every
// iteration; with several ranks summed over them every 20 iterations and at the last (one
// all-gather each time), recorded by rank 0 only, and only once above zero.
TEST(TrainerSeams, ACountIsSummedOverTheRanksAtTheWritersPace) {
  const config::CfgNode cfg = toy_config();
  auto run = [&](double count, int64_t iters, bool with_hook = true) {
    auto model = modeling::build_model(cfg);
    auto optimizer = solver::build_optimizer(cfg, *model);
    auto trainer = std::make_unique<Trainer>(
        model, *optimizer, [] { return std::vector{toy_input(1)}; }, 1);
    if (with_hook)
      trainer->register_hook(
          std::make_shared<SumOverRanksHook>("data/bad_images", [count] { return count; }));
    trainer->train(0, iters);
    return trainer;
  };
  {
    const auto one = run(3, 5);
    ASSERT_TRUE(one->storage().has("data/bad_images"));
    EXPECT_EQ(one->storage().latest("data/bad_images"), (std::pair<double, int64_t>{3.0, 4}));
  }
  {
    testing::ScopedRank rank0(0, 2);  // the other rank holds as many: the sum is twice ours
    run(3, 25, /*with_hook=*/false);
    const int without = rank0.collectives();
    const auto job = run(3, 25);
    EXPECT_EQ(job->storage().latest("data/bad_images"), (std::pair<double, int64_t>{6.0, 24}));
    EXPECT_EQ(rank0.collectives() - 2 * without, 2) << "at iterations 19 and 24 only";
    EXPECT_FALSE(run(0, 20)->storage().has("data/bad_images"));  // nothing bad: no metric
  }
  {
    testing::ScopedRank rank1(1, 2);
    EXPECT_FALSE(run(3, 20)->storage().has("data/bad_images"));  // only rank 0 records it
  }
}

}  // namespace
}  // namespace detkit::engine
