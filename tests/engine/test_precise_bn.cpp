// Precise BatchNorm (TEST.PRECISE_BN): update_bn_stats writes into each BatchNorm layer the mean
// and biased variance of every value it normalised over the batches taken together (fvcore's
// population estimator), computed here independently from the inputs; the hook runs after every
// TEST.EVAL_PERIOD-th iteration and after the last, before the evaluation, on one stream of
// batches; a resumed run repeats the uninterrupted one's statistics.
#include <gtest/gtest.h>
#include <torch/nn/modules/batchnorm.h>

#include <filesystem>

#include "detkit/engine/defaults.h"
#include "detkit/engine/hooks.h"
#include "detkit/engine/precise_bn.h"
#include "detkit/layers/conv2d.h"
#include "detkit/layers/sync_batch_norm.h"
#include "detkit/solver/build.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "tests/support/scoped_rank.h"
#include "tests/support/tiny_shapes.h"

namespace detkit::engine {
namespace {

// conv1 (BN, ReLU) -> conv2 (SyncBN) -> frozen (FrozenBN); `unused` (BN) never runs.
struct ConvNet : torch::nn::Module {
  ConvNet() {
    conv1 = register_module(
        "conv1", layers::Conv2d(layers::Conv2dOptions(3, 4, 3).padding(1).norm("BN").relu(true)));
    conv2 = register_module("conv2", layers::Conv2d(layers::Conv2dOptions(4, 5, 1).norm("SyncBN")));
    frozen =
        register_module("frozen", layers::Conv2d(layers::Conv2dOptions(5, 2, 1).norm("FrozenBN")));
    unused = register_module("unused", layers::Conv2d(layers::Conv2dOptions(5, 2, 1).norm("BN")));
    // Weights of its own generator (the same on every run), the norms' affine parameters away
    // from (1, 0) so that conv2's input depends on them.
    at::NoGradGuard no_grad;
    auto gen = at::detail::createCPUGenerator(11);
    for (auto& item : named_parameters()) {
      at::Tensor& p = item.value();
      if (item.key().find(".norm.") != std::string::npos)
        p.copy_(at::rand(p.sizes(), gen) + 0.5);
      else
        p.copy_(at::randn(p.sizes(), gen) * 0.3);
    }
  }
  at::Tensor forward(const at::Tensor& x) {
    return frozen->forward(conv2->forward(conv1->forward(x)));
  }
  layers::Conv2d conv1{nullptr}, conv2{nullptr}, frozen{nullptr}, unused{nullptr};
};

// Batches of different sizes whose means differ, so that the population's variance (which holds
// the spread of the batch means) and the weights (values per channel) both matter.
std::vector<at::Tensor> varied_batches() {
  auto gen = at::detail::createCPUGenerator(3);
  return {at::randn({2, 3, 6, 7}, gen) * 2 + 1, at::randn({3, 3, 5, 5}, gen) - 2,
          at::randn({1, 3, 8, 4}, gen) * 0.5 + 3};
}

// The values each of conv1's and conv2's norms sees, per channel (C, values), all batches
// concatenated, computed from the inputs with the layers' weights: conv, batch norm with the
// batch's own (biased) statistics, ReLU, conv.
std::pair<at::Tensor, at::Tensor> normalised_values(ConvNet& net,
                                                    const std::vector<at::Tensor>& xs) {
  auto params = net.named_parameters();
  std::vector<at::Tensor> first, second;
  const auto per_channel = [](const at::Tensor& y) {
    return y.transpose(0, 1).reshape({y.size(1), -1});
  };
  for (const at::Tensor& x : xs) {
    const at::Tensor y1 = at::conv2d(x, params["conv1.weight"], params["conv1.bias"], 1, 1);
    const at::Tensor v1 = per_channel(y1);
    const at::Tensor mean = v1.mean(1).view({1, -1, 1, 1});
    const at::Tensor var = v1.var(1, /*unbiased=*/false).view({1, -1, 1, 1});
    const at::Tensor z = at::relu((y1 - mean) / at::sqrt(var + 1e-5) *
                                      params["conv1.norm.weight"].view({1, -1, 1, 1}) +
                                  params["conv1.norm.bias"].view({1, -1, 1, 1}));
    const at::Tensor y2 = at::conv2d(z, params["conv2.weight"], params["conv2.bias"]);
    first.push_back(v1);
    second.push_back(per_channel(y2));
  }
  return {at::cat(first, 1), at::cat(second, 1)};
}

double max_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

at::Tensor buffer_of(torch::nn::Module& m, const std::string& name) {
  return m.named_buffers()[name];
}

// How far fvcore's estimator before 2021 (each batch's mean and unbiased variance, averaged
// with equal weights) is from the population's on conv1's values: what shows that the batches
// tell the two apart.
double old_estimator_difference(ConvNet& net, const std::vector<at::Tensor>& xs,
                                const at::Tensor& all_values) {
  std::vector<at::Tensor> means, vars;
  for (const at::Tensor& x : xs) {
    const at::Tensor v = normalised_values(net, {x}).first;
    means.push_back(v.mean(1));
    vars.push_back(v.var(1, /*unbiased=*/true));
  }
  return std::max(max_diff(at::stack(means).mean(0), all_values.mean(1)),
                  max_diff(at::stack(vars).mean(0), all_values.var(1, false)));
}

TEST(PreciseBN, StatisticsAreThoseOfAllTheBatchesTogether) {
  ConvNet net;
  net.train();
  const std::vector<at::Tensor> xs = varied_batches();
  EXPECT_EQ(bn_layer_names(net),
            (std::vector<std::string>{"conv1.norm", "conv2.norm", "unused.norm"}));
  std::map<std::string, at::Tensor> params_before, buffers_before;
  for (const auto& item : net.named_parameters()) params_before[item.key()] = item.value().clone();
  for (const auto& item : net.named_buffers()) buffers_before[item.key()] = item.value().clone();

  update_bn_stats(
      net, [&](int64_t k) { net.forward(xs.at(static_cast<size_t>(k))); }, 3);

  const auto [v1, v2] = normalised_values(net, xs);
  const double d_mean1 = max_diff(buffer_of(net, "conv1.norm.running_mean"), v1.mean(1));
  const double d_var1 = max_diff(buffer_of(net, "conv1.norm.running_var"), v1.var(1, false));
  const double d_mean2 = max_diff(buffer_of(net, "conv2.norm.running_mean"), v2.mean(1));
  const double d_var2 = max_diff(buffer_of(net, "conv2.norm.running_var"), v2.var(1, false));
  std::cout << "[ precise BN ] BN: max |running_mean - population mean| " << d_mean1
            << ", |running_var - population variance| " << d_var1
            << "; SyncBN (after it): " << d_mean2 << ", " << d_var2
            << " (values per channel: " << v1.size(1) << ")\n";
  EXPECT_LT(std::max({d_mean1, d_var1, d_mean2, d_var2}), 1e-5);
  const double estimators = old_estimator_difference(net, xs, v1);
  std::cout << "[ precise BN ] the average of the batches' statistics differs from the "
               "population's by up to "
            << estimators << "\n";
  EXPECT_GT(estimators, 0.1) << "the batches do not tell the estimators apart";

  for (const auto& [name, before] : params_before) {
    EXPECT_TRUE(net.named_parameters()[name].equal(before)) << name;
    EXPECT_FALSE(net.named_parameters()[name].grad().defined()) << name;
  }
  for (const char* name : {"frozen.norm.weight", "frozen.norm.bias", "frozen.norm.running_mean",
                           "frozen.norm.running_var", "unused.norm.running_mean",
                           "unused.norm.running_var", "unused.norm.num_batches_tracked"})
    EXPECT_TRUE(buffer_of(net, name).equal(buffers_before.at(name))) << name << " changed";
  EXPECT_EQ(buffer_of(net, "conv1.norm.num_batches_tracked").item<int64_t>(), 3);
  auto modules = net.named_modules("", /*include_self=*/false);
  EXPECT_EQ(modules["conv1.norm"]->as<torch::nn::BatchNorm2d>()->options.momentum().value_or(-1),
            0.1);
  EXPECT_EQ(modules["conv2.norm"]->as<layers::NaiveSyncBatchNorm2d>()->momentum(), 0.1);
}

TEST(PreciseBN, SyncBNOverRanksUsesTheGlobalBatchAndBNStaysPerRank) {
  // Rank 0 of 2 whose peer holds the same images: the global batch's statistics are this rank's,
  // SyncBN's running variance is the biased one, and the counts are summed over the ranks. Tiny
  // batches (6 to 12 values per channel), where a variance corrected twice would be far off.
  testing::ScopedRank rank(0, 2);
  ConvNet net;
  net.train();
  auto gen = at::detail::createCPUGenerator(8);
  const std::vector<at::Tensor> xs = {at::randn({1, 3, 2, 3}, gen) + 1,
                                      at::randn({2, 3, 2, 3}, gen),
                                      at::randn({3, 3, 2, 2}, gen) * 3};
  update_bn_stats(
      net, [&](int64_t k) { net.forward(xs.at(static_cast<size_t>(k))); }, 3);
  const auto [v1, v2] = normalised_values(net, xs);
  const double d1 = std::max(max_diff(buffer_of(net, "conv1.norm.running_mean"), v1.mean(1)),
                             max_diff(buffer_of(net, "conv1.norm.running_var"), v1.var(1, false)));
  const double d2 = std::max(max_diff(buffer_of(net, "conv2.norm.running_mean"), v2.mean(1)),
                             max_diff(buffer_of(net, "conv2.norm.running_var"), v2.var(1, false)));
  std::cout << "[ precise BN ] rank 0 of 2: BN max difference " << d1 << ", SyncBN " << d2 << "\n";
  EXPECT_LT(std::max(d1, d2), 1e-5);
}

TEST(PreciseBN, ABatchNormItCannotMeasureIsAnErrorNamingIt) {
  struct Reused : torch::nn::Module {
    layers::Conv2d conv =
        register_module("conv", layers::Conv2d(layers::Conv2dOptions(2, 2, 1).norm("BN")));
  } reused;
  reused.train();
  const at::Tensor x = at::randn({2, 2, 3, 3});
  try {
    update_bn_stats(
        reused, [&](int64_t) { reused.conv->forward(reused.conv->forward(x)); }, 1);
    ADD_FAILURE() << "a BatchNorm run twice per batch was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'conv.norm' ran 2 times in one forward pass"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(reused.conv->named_modules("", false)["norm"]
                ->as<torch::nn::BatchNorm2d>()
                ->options.momentum()
                .value_or(-1),
            0.1)
      << "the momentum comes back after an error";
  struct Bare : torch::nn::Module {
    torch::nn::BatchNorm2d bn = register_module("bn", torch::nn::BatchNorm2d(2));
  } bare;
  try {
    update_bn_stats(
        bare, [&](int64_t) { bare.bn->forward(x); }, 1);
    ADD_FAILURE() << "a BatchNorm outside Conv2d was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'bn' ran outside layers::Conv2d"), std::string::npos)
        << e.what();
  }
}

// A model whose training losses run one Conv2d with BN over the batch's images.
class BNDetector : public modeling::MetaArch {
 public:
  BNDetector()
      : conv_(register_module("conv", layers::Conv2d(layers::Conv2dOptions(3, 2, 1).norm("BN")))) {}
  structures::LossDict losses(const std::vector<structures::ModelInput>& batch) override {
    std::vector<at::Tensor> images;
    for (const auto& input : batch) images.push_back(input.image);
    return {{"loss", conv_->forward(at::stack(images)).pow(2).mean()}};
  }
  std::vector<structures::Instances> inference(
      const std::vector<structures::ModelInput>&) override {
    return {};
  }

 private:
  layers::Conv2d conv_;
};

std::vector<structures::ModelInput> image_batch(double offset) {
  structures::ModelInput input;
  input.image = at::rand({3, 4, 4}) + offset;
  input.height = input.width = 4;
  return {input, input};
}

class StepLog : public HookBase {
 public:
  explicit StepLog(std::vector<std::string>& events) : events_(events) {}
  void before_step(Trainer& t) override { events_.push_back("step " + std::to_string(t.iter())); }

 private:
  std::vector<std::string>& events_;
};

TEST(PreciseBN, RunsEveryPeriodAndAfterTheLastIterationBeforeTheEvaluation) {
  auto model = std::make_shared<BNDetector>();
  auto optimizer = solver::build_optimizer(config::get_cfg(), *model);
  Trainer trainer(
      model, *optimizer, [] { return image_batch(0); }, 1);
  std::vector<std::string> events;
  int made = 0, fetched = 0;
  trainer.register_hook(std::make_shared<StepLog>(events));
  trainer.register_hook(std::make_shared<PreciseBN>(3, 2, [&]() -> BatchSource {
    ++made;
    return [&] {
      events.push_back("precise-BN batch " + std::to_string(fetched++));
      return image_batch(static_cast<double>(fetched));
    };
  }));
  trainer.register_hook(std::make_shared<EvalHook>(
      3, [&](Trainer& t) { events.push_back("evaluate after " + std::to_string(t.iter())); }));
  trainer.train(0, 7);
  const std::vector<std::string> expected = {"step 0",
                                             "step 1",
                                             "step 2",
                                             "precise-BN batch 0",
                                             "precise-BN batch 1",
                                             "evaluate after 2",
                                             "step 3",
                                             "step 4",
                                             "step 5",
                                             "precise-BN batch 2",
                                             "precise-BN batch 3",
                                             "evaluate after 5",
                                             "step 6",
                                             "precise-BN batch 4",
                                             "precise-BN batch 5",
                                             "evaluate after 6"};
  EXPECT_EQ(events, expected);
  EXPECT_EQ(made, 1) << "one stream of batches for every run";

  // Period 0: only after the last iteration.
  events.clear();
  Trainer once(
      model, *optimizer, [] { return image_batch(0); }, 1);
  once.register_hook(std::make_shared<PreciseBN>(0, 1, [&]() -> BatchSource {
    return [&] {
      events.push_back("precise-BN batch");
      return image_batch(1);
    };
  }));
  once.train(0, 4);
  EXPECT_EQ(events, std::vector<std::string>{"precise-BN batch"});
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::map<std::string, at::Tensor> bn_statistics(modeling::MetaArch& model) {
  std::map<std::string, at::Tensor> out;
  for (const auto& item : model.named_buffers())
    if (item.key().find("running_") != std::string::npos) out[item.key()] = item.value().clone();
  return out;
}

TEST(PreciseBN, DefaultTrainerRunsItBeforeEachEvaluationAndAResumedRunRepeatsIt) {
  testing::TinySetup setup("precise_bn");
  config::CfgNode base = testing::tiny_config(setup, "precise_bn");
  base.merge_from_list({"MODEL.RESNETS.NORM", "BN", "TEST.PRECISE_BN.ENABLED", "True",
                        "TEST.PRECISE_BN.NUM_ITER", "2", "TEST.EVAL_PERIOD", "3"});
  std::map<std::string, at::Tensor> uninterrupted;
  {
    config::CfgNode cfg = base;
    const std::string out = setup.dir.path("out_uninterrupted");
    cfg.merge_from_list({"OUTPUT_DIR", out});
    default_setup(cfg);
    DefaultTrainer trainer(cfg, 1);
    trainer.resume_or_load(false);
    trainer.train();  // 6 iterations: precise BN and evaluation after the 3rd and the 6th
    uninterrupted = bn_statistics(*trainer.model());
    const std::string log = read_file(out + "/log.txt");
    const std::string run = "Running precise-BN for 2 iterations...";
    const std::string computing = "Computing precise BN statistics for ";
    const std::string evaluating = "Evaluating precise_bn_val";
    EXPECT_EQ(occurrences(log, run), 2u) << log;
    EXPECT_EQ(occurrences(log, evaluating), 2u) << log;
    const size_t first_run = log.find(run), first_eval = log.find(evaluating);
    const size_t second_run = log.find(run, first_run + 1);
    EXPECT_LT(first_run, first_eval);
    EXPECT_LT(first_eval, second_run);
    EXPECT_LT(second_run, log.find(evaluating, first_eval + 1));
    EXPECT_LT(log.find(computing), first_eval);
  }
  ASSERT_FALSE(uninterrupted.empty());
  {
    // From the uninterrupted run's iteration-2 checkpoint, written after its first precise BN:
    // the second must use the hook's batches 2 and 3, as the uninterrupted run's did.
    config::CfgNode cfg = base;
    const std::string out = setup.dir.path("out_resumed");
    std::filesystem::create_directories(out);
    std::filesystem::copy_file(setup.dir.path("out_uninterrupted/model_0000002.pth"),
                               out + "/model_0000002.pth");
    atomic_write(out + "/last_checkpoint", "model_0000002.pth");
    cfg.merge_from_list({"OUTPUT_DIR", out});
    default_setup(cfg);
    DefaultTrainer trainer(cfg, 1);
    trainer.resume_or_load(true);
    trainer.train();
    EXPECT_NE(read_file(out + "/log.txt").find("Resuming from"), std::string::npos);
    const auto resumed = bn_statistics(*trainer.model());
    ASSERT_EQ(resumed.size(), uninterrupted.size());
    double d = 0;
    for (const auto& [name, value] : uninterrupted)
      d = std::max(d, max_diff(resumed.at(name), value));
    std::cout << "[ precise BN ] " << resumed.size()
              << " running statistics, resumed at iteration 3 vs uninterrupted: max difference "
              << d << "\n";
    EXPECT_EQ(d, 0.0);
  }
  {
    config::CfgNode cfg = testing::tiny_config(setup, "precise_bn_gn");  // GN: no BatchNorm
    const std::string out = setup.dir.path("out_gn");
    cfg.merge_from_list({"OUTPUT_DIR", out, "TEST.PRECISE_BN.ENABLED", "True", "SOLVER.MAX_ITER",
                         "1", "DATASETS.TEST", "()"});
    default_setup(cfg);
    DefaultTrainer trainer(cfg, 1);
    trainer.resume_or_load(false);
    trainer.train();
    const std::string log = read_file(out + "/log.txt");
    EXPECT_EQ(occurrences(log, "the model has no BatchNorm layer in training mode"), 1u) << log;
    EXPECT_EQ(occurrences(log, "Running precise-BN"), 0u) << log;
  }
}

}  // namespace
}  // namespace detkit::engine
