// Parameter groups: which parameters get which lr / weight decay, and how many groups result.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "detkit/config/defaults.h"
#include "detkit/layers/conv2d.h"
#include "detkit/solver/build.h"
#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

using layers::Conv2d;
using layers::Conv2dOptions;

// conv1 (no bias) + BN, conv2 + GN, conv3 + FrozenBN (no parameters), a linear layer, a linear
// layer registered twice (shared), and a frozen linear layer.
struct Net : torch::nn::Module {
  Net() {
    conv1 = register_module("conv1", Conv2d(Conv2dOptions(3, 4, 3).bias(false).norm("BN")));
    conv2 = register_module("conv2", Conv2d(Conv2dOptions(4, 32, 1).norm("GN")));
    conv3 = register_module("conv3", Conv2d(Conv2dOptions(32, 8, 1).norm("FrozenBN")));
    fc = register_module("fc", torch::nn::Linear(8, 2));
    shared = register_module("shared", torch::nn::Linear(2, 2));
    register_module("shared_again", shared);
    frozen = register_module("frozen", torch::nn::Linear(2, 2));
    for (auto& p : frozen->parameters()) p.requires_grad_(false);
  }
  Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  torch::nn::Linear fc{nullptr}, shared{nullptr}, frozen{nullptr};
};

struct Resolved {
  double lr, weight_decay;
};

// name -> (lr, weight decay) as the optimizer will use them, checking each name appears once.
std::map<std::string, Resolved> resolve(const SGD& sgd) {
  std::map<std::string, Resolved> out;
  for (const auto& g : sgd.param_groups()) {
    for (const auto& name : g.names) {
      EXPECT_TRUE(out.emplace(name, Resolved{g.lr, g.weight_decay}).second) << name;
    }
  }
  return out;
}

const std::vector<std::string> kRegular = {"conv1.weight", "conv2.weight", "conv3.weight",
                                           "fc.weight", "shared.weight"};
const std::vector<std::string> kBias = {"conv2.bias", "conv3.bias", "fc.bias", "shared.bias"};
const std::vector<std::string> kNormWeight = {"conv1.norm.weight", "conv2.norm.weight"};
const std::vector<std::string> kNormBias = {"conv1.norm.bias", "conv2.norm.bias"};

TEST(ParamGroups, DefaultsGiveTwoGroups) {
  Net net;
  auto cfg = config::get_cfg();
  cfg.set("SOLVER.BASE_LR", 0.02);
  auto sgd = build_optimizer(cfg, net);
  ASSERT_EQ(sgd->param_groups().size(), 2u);
  // Detectron2's order: the first group is the one of the first parameter met (conv1.weight).
  EXPECT_EQ(sgd->param_groups()[0].names,
            (std::vector<std::string>{"conv1.weight", "conv2.weight", "conv2.bias", "conv3.weight",
                                      "conv3.bias", "fc.weight", "fc.bias", "shared.weight",
                                      "shared.bias"}));
  EXPECT_EQ(sgd->param_groups()[1].names,
            (std::vector<std::string>{"conv1.norm.weight", "conv1.norm.bias", "conv2.norm.weight",
                                      "conv2.norm.bias"}));
  const auto r = resolve(*sgd);
  EXPECT_EQ(r.size(), 13u);  // 13 trainable, the frozen and the shared copy excluded
  for (const auto& n : kRegular) EXPECT_EQ(r.at(n).weight_decay, 1e-4) << n;
  for (const auto& n : kBias) EXPECT_EQ(r.at(n).weight_decay, 1e-4) << n;
  for (const auto& n : kNormWeight) EXPECT_EQ(r.at(n).weight_decay, 0.0) << n;
  for (const auto& n : kNormBias) EXPECT_EQ(r.at(n).weight_decay, 0.0) << n;
  for (const auto& [n, v] : r) EXPECT_EQ(v.lr, 0.02) << n;
  EXPECT_EQ(sgd->param_groups()[0].momentum, 0.9);
  EXPECT_FALSE(sgd->param_groups()[0].nesterov);
}

TEST(ParamGroups, BiasOverridesWinOverNorm) {
  Net net;
  auto cfg = config::get_cfg();
  cfg.set("SOLVER.BASE_LR", 0.02);
  cfg.set("SOLVER.BIAS_LR_FACTOR", 2.0);
  cfg.set("SOLVER.WEIGHT_DECAY_BIAS", 0.0);
  cfg.set("SOLVER.WEIGHT_DECAY_NORM", 5e-5);
  auto sgd = build_optimizer(cfg, net);
  ASSERT_EQ(sgd->param_groups().size(), 3u);  // regular, norm weights, all biases
  const auto r = resolve(*sgd);
  for (const auto& n : kRegular) {
    EXPECT_EQ(r.at(n).lr, 0.02) << n;
    EXPECT_EQ(r.at(n).weight_decay, 1e-4) << n;
  }
  for (const auto& n : kNormWeight) {
    EXPECT_EQ(r.at(n).lr, 0.02) << n;
    EXPECT_EQ(r.at(n).weight_decay, 5e-5) << n;
  }
  for (const auto& v : {kBias, kNormBias}) {
    for (const auto& n : v) {
      EXPECT_EQ(r.at(n).lr, 0.04) << n;
      EXPECT_EQ(r.at(n).weight_decay, 0.0) << n;
    }
  }
  EXPECT_EQ(sgd->param_groups()[1].names.front(), "conv1.norm.weight");
  EXPECT_EQ(sgd->param_groups()[2].names.front(), "conv1.norm.bias");
}

TEST(ParamGroups, ExplicitDecayEqualToDefaultStillSeparates) {
  // Detectron2 keys groups by their explicit settings: a norm group with WEIGHT_DECAY_NORM equal
  // to WEIGHT_DECAY stays apart from the groups that take the optimizer's default.
  Net net;
  auto cfg = config::get_cfg();
  cfg.set("SOLVER.WEIGHT_DECAY_NORM", 1e-4);
  auto sgd = build_optimizer(cfg, net);
  ASSERT_EQ(sgd->param_groups().size(), 2u);
  EXPECT_EQ(sgd->param_groups()[1].weight_decay, 1e-4);
}

TEST(ParamGroups, NormDetectionByType) {
  EXPECT_TRUE(is_norm_module(*torch::nn::BatchNorm2d(4)));
  EXPECT_TRUE(is_norm_module(*torch::nn::GroupNorm(2, 4)));
  EXPECT_TRUE(is_norm_module(*torch::nn::LayerNorm(torch::nn::LayerNormOptions({4}))));
  EXPECT_TRUE(is_norm_module(*torch::nn::InstanceNorm2d(4)));
  EXPECT_FALSE(is_norm_module(*torch::nn::Linear(4, 4)));
  EXPECT_FALSE(is_norm_module(*Conv2d(Conv2dOptions(4, 4, 1).norm("BN"))));
}

TEST(ParamGroups, BiasLrFactorNeedsBaseLr) {
  Net net;
  ParamGroupOptions options;
  options.bias_lr_factor = 2.0;
  EXPECT_THROW(get_default_optimizer_params(net, options), Error);
  options.bias_lr_factor = 1.0;
  const auto groups = get_default_optimizer_params(net, options);
  ASSERT_EQ(groups.size(), 1u);  // no overrides at all: every parameter in one group
  EXPECT_EQ(groups[0].params.size(), 13u);
  EXPECT_FALSE(groups[0].lr.has_value());
}

}  // namespace
}  // namespace detkit::solver
