// ResNet's maps under CONV_ALGORITHM auto: channels-last in eval mode with a BatchNorm-family norm
// (oneDNN reads and writes them without reordering); blocked (ops/blocked_maps.h) from the stem's
// convolution through the stages in training with BN, FrozenBN or GN, NCHW at their outputs, and
// on through an FPN to its levels' outputs (channels-last); NCHW for GroupNorm in eval mode and
// under `direct`.
// The values, gradients and running statistics are the NCHW network's up to float32 rounding (and
// for gradients, the ReLU kinks it flips); a NaN gets through as on NCHW maps.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <iostream>
#include <limits>
#include <map>
#include <string>

#include "detkit/layers/conv2d.h"
#include "detkit/modeling/backbone/fpn.h"
#include "detkit/modeling/backbone/resnet.h"
#include "detkit/ops/blocked_maps.h"

namespace detkit::modeling {
namespace {

struct AlgorithmScope {
  explicit AlgorithmScope(layers::ConvAlgorithm a) { layers::set_conv_algorithm(a); }
  ~AlgorithmScope() { layers::set_conv_algorithm(layers::ConvAlgorithm::kAuto); }
};

ResNet resnet18(const std::string& norm) {
  torch::manual_seed(3);
  return ResNet(
      ResNetOptions().depth(18).res2_out_channels(64).norm(norm).freeze_at(0).out_features(
          {"res2", "res3", "res4", "res5"}));
}

FeatureMap run(ResNet& net, const at::Tensor& images, layers::ConvAlgorithm algorithm) {
  AlgorithmScope scope(algorithm);
  torch::NoGradGuard no_grad;
  return net.forward(images);
}

double relative(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max()).item<double>();
}

TEST(ResNetLayout, BatchNormNetworksRunChannelsLastInEvalModeUnderAuto) {
  const at::Tensor images = torch::randn({2, 3, 64, 96});
  for (const std::string norm : {"BN", "FrozenBN"}) {
    ResNet net = resnet18(norm);
    net.eval();
    const FeatureMap nchw = run(net, images, layers::ConvAlgorithm::kDirect);
    const FeatureMap channels_last = run(net, images, layers::ConvAlgorithm::kAuto);
    for (const auto& [name, map] : channels_last) {
      EXPECT_TRUE(nchw.at(name).is_contiguous()) << norm << " " << name << " under direct";
      EXPECT_TRUE(map.is_contiguous(at::MemoryFormat::ChannelsLast)) << norm << " " << name;
      const double diff = relative(map, nchw.at(name));
      std::cout << "[ layout ] " << norm << " " << name
                << ": channels-last (auto) vs NCHW (direct), max diff / max |value| " << diff
                << "\n";
      EXPECT_LT(diff, 1e-4) << norm << " " << name;
    }
  }
}

TEST(ResNetLayout, GroupNormNetworksInEvalModeAndTrainingOutputsStayNchw) {
  const at::Tensor images = torch::randn({2, 3, 64, 96});
  ResNet gn = resnet18("GN");
  gn.eval();
  for (const auto& [name, map] : run(gn, images, layers::ConvAlgorithm::kAuto))
    EXPECT_TRUE(map.is_contiguous()) << "GN " << name;
  for (const std::string norm : {"BN", "FrozenBN", "GN"}) {
    ResNet net = resnet18(norm);  // in training mode
    for (const auto& [name, map] : run(net, images, layers::ConvAlgorithm::kAuto))
      EXPECT_TRUE(map.is_contiguous()) << norm << " " << name;
  }
}

// One training step's outputs, parameter gradients and buffers (BatchNorm's running statistics).
struct Step {
  FeatureMap maps;
  std::map<std::string, at::Tensor> grads, buffers;
};

Step train_step(Backbone& net, const at::Tensor& images, layers::ConvAlgorithm algorithm) {
  AlgorithmScope scope(algorithm);
  Step step;
  step.maps = net.forward(images);
  at::Tensor loss = at::zeros({});
  torch::manual_seed(7);  // the same random upstream gradient for every map, in both runs
  for (const auto& [name, map] : step.maps) loss = loss + (map * at::randn(map.sizes())).mean();
  loss.backward();
  for (const auto& p : net.named_parameters())
    if (p.value().grad().defined()) step.grads[p.key()] = p.value().grad().clone();
  for (const auto& b : net.named_buffers()) step.buffers[b.key()] = b.value().clone();
  return step;
}

// How far one step's parameter gradients are from the reference step's: the worst over
// parameters of max |a - b| / max |b| and of ||a - b|| / ||b||.
struct GradientDiff {
  double max = 0, norm = 0;
};

GradientDiff compare_gradients(const Step& step, const Step& reference) {
  EXPECT_EQ(step.grads.size(), reference.grads.size());
  GradientDiff d;
  for (const auto& [name, grad] : step.grads) {
    const at::Tensor& ref = reference.grads.at(name);
    d.max = std::max(d.max, relative(grad, ref));
    d.norm = std::max(d.norm, ((grad - ref).norm() / ref.norm()).item<double>());
  }
  return d;
}

// A step's gradients are discontinuous in its input: a ReLU's mask or a max pooling's choice flips
// where float32 rounding moves a value across the kink, and one flip moves the gradients upstream
// of it by up to tens of percent at a point, by little in norm. With BatchNorm's batch statistics
// flips are common: over image seeds 0-4 (blocked vs NCHW kernels) BN R18 measured max diffs of
// 1e-5 to 0.27 and norm diffs to 0.022, BN R50 max diffs to 0.29 and norm diffs to 0.055; seed 4
// flipped with the stem on either path. Without them (FrozenBN) they are rarer but happen: under
// OPENBLAS_CORETYPE=Haswell (AMD EPYC Zen 5) the NCHW path rounds differently and the ReLU after
// R50's res4.2 sum flips once: res4.3 onwards agree to 1e-6, res4.2.conv3's gradient differs by
// 1.1% of its largest value, earlier ones by 0.2% at most, 0.15% in norm (R50-FPN: 2.1%, 0.29%).
// GroupNorm's per-image statistics amplify a flip as BatchNorm's do: GN R50 measured 0.028 max,
// 0.0069 in norm (GN R18 4e-6). Steps therefore compare in norm, against bounds that a wrong
// kernel or layout (an error of the order of the gradient) exceeds: 0.1 for norms that compute
// statistics, 0.01 for FrozenBN.
void expect_gradients_agree(const GradientDiff& d, bool computed_statistics) {
  EXPECT_LT(d.norm, computed_statistics ? 0.1 : 0.01);
}

TEST(ResNetLayout, TrainingKeepsMapsBlockedInsideStagesAndMatchesNchw) {
  if (!ops::blocked_maps_available())
    GTEST_SKIP() << "oneDNN has no AVX-512 kernels for blocked maps on this CPU (see lscpu)";
  // res5 of 4 x 6: BatchNorm's batch statistics there are of 48 values per channel
  torch::manual_seed(0);
  const at::Tensor images = torch::randn({2, 3, 128, 192});
  for (const std::string norm : {"BN", "FrozenBN", "GN"}) {
    for (const int64_t depth : {18, 50}) {
      SCOPED_TRACE(norm + " R" + std::to_string(depth));
      auto make = [&] {
        torch::manual_seed(3);
        return ResNet(ResNetOptions()
                          .depth(depth)
                          .res2_out_channels(depth == 18 ? 64 : 256)
                          .norm(norm)
                          .freeze_at(norm == "FrozenBN" ? 2 : 0)
                          .out_features({"res2", "res3", "res4", "res5"}));
      };
      ResNet nchw_net = make(), blocked_net = make();
      const Step nchw = train_step(nchw_net, images, layers::ConvAlgorithm::kDirect);
      const Step blocked = train_step(blocked_net, images, layers::ConvAlgorithm::kAuto);
      double worst_map = 0, worst_buffer = 0;
      for (const auto& [name, map] : blocked.maps) {
        EXPECT_TRUE(map.is_contiguous() && map.dim() == 4) << name;  // NCHW for the FPN
        if (map.grad_fn())  // (frozen stages' maps have none)
          EXPECT_NE(map.grad_fn()->name().find("FromBlocked"), std::string::npos)
              << name << " was not computed on blocked maps: " << map.grad_fn()->name();
        worst_map = std::max(worst_map, relative(map, nchw.maps.at(name)));
      }
      const GradientDiff grads = compare_gradients(blocked, nchw);
      for (const auto& [name, buffer] : blocked.buffers) {
        if (buffer.scalar_type() != at::kFloat) {  // num_batches_tracked
          EXPECT_TRUE(buffer.equal(nchw.buffers.at(name))) << name;
          continue;
        }
        worst_buffer = std::max(worst_buffer, relative(buffer, nchw.buffers.at(name)));
      }
      std::cout << "[ layout ] " << norm << " R" << depth
                << " training, blocked (auto) vs NCHW (direct), max diff / max |value|: maps "
                << worst_map << ", parameter gradients " << grads.max << " (in norm " << grads.norm
                << "), buffers " << worst_buffer << "\n";
      // A freshly initialised ResNet-50 with batch statistics is ill-conditioned in its maps too
      // (Winograd vs direct kernels on NCHW maps also measured 9e-5 here).
      EXPECT_LT(worst_map, norm == "BN" && depth == 50 ? 5e-4 : 2e-5);
      expect_gradients_agree(grads, norm != "FrozenBN");
      EXPECT_LT(worst_buffer, 1e-4);
    }
  }
}

// A diverged step (here a NaN pixel) must reach the loss on blocked maps as on NCHW ones, so that
// training stops there: oneDNN's fused BatchNorm+ReLU and its max pooling would each drop a NaN.
TEST(ResNetLayout, ANanReachesEveryBlockedMapAsItReachesNchwOnes) {
  if (!ops::blocked_maps_available())
    GTEST_SKIP() << "oneDNN has no AVX-512 kernels for blocked maps on this CPU (see lscpu)";
  at::Tensor images = torch::randn({2, 3, 64, 96});
  images[1][0][10][20] = std::numeric_limits<float>::quiet_NaN();
  for (const std::string norm : {"BN", "FrozenBN", "GN"}) {
    ResNet net = resnet18(norm);  // in training mode: blocked under auto
    for (const auto& [name, map] : run(net, images, layers::ConvAlgorithm::kAuto))
      EXPECT_TRUE(map.isnan().any().item<bool>()) << norm << " " << name;
  }
}

// Detectron2's R-FPN backbones (ResNet + FPN + top block) continue on the ResNet's blocked maps
// through the FPN; its levels leave as 4-D maps stored channels-last (what ROIAlign reads in
// place).
TEST(ResNetLayout, FpnContinuesOnBlockedMapsAndMatchesNchw) {
  if (!ops::blocked_maps_available())
    GTEST_SKIP() << "oneDNN has no AVX-512 kernels for blocked maps on this CPU (see lscpu)";
  torch::manual_seed(0);
  const at::Tensor images = torch::randn({2, 3, 128, 192});
  struct Case {
    std::string norm, top_block;
    int64_t depth;
  };
  for (const Case& k :
       {Case{"BN", "max_pool", 18}, Case{"FrozenBN", "p6p7", 50}, Case{"GN", "max_pool", 18}}) {
    SCOPED_TRACE(k.norm + " R" + std::to_string(k.depth) + "-FPN, " + k.top_block);
    auto make = [&] {
      torch::manual_seed(3);
      auto resnet = std::make_shared<ResNet>(ResNetOptions()
                                                 .depth(k.depth)
                                                 .res2_out_channels(k.depth == 18 ? 64 : 256)
                                                 .norm(k.norm)
                                                 .freeze_at(k.norm == "FrozenBN" ? 2 : 0)
                                                 .out_features({"res2", "res3", "res4", "res5"}));
      return FPN(resnet, FPNOptions()
                             .in_features({"res2", "res3", "res4", "res5"})
                             .out_channels(64)
                             .top_block(k.top_block)
                             .top_block_in_feature("res5"));
    };
    FPN nchw_net = make(), blocked_net = make();
    const Step nchw = train_step(nchw_net, images, layers::ConvAlgorithm::kDirect);
    const Step blocked = train_step(blocked_net, images, layers::ConvAlgorithm::kAuto);
    ASSERT_EQ(blocked.maps.size(), nchw.maps.size());
    double worst_map = 0;
    for (const auto& [name, map] : blocked.maps) {
      ASSERT_EQ(map.dim(), 4) << name;
      const bool p6p7_conv = k.top_block == "p6p7" && (name == "p6" || name == "p7");
      EXPECT_TRUE(map.is_contiguous(p6p7_conv ? at::MemoryFormat::Contiguous
                                              : at::MemoryFormat::ChannelsLast))
          << name;
      worst_map = std::max(worst_map, relative(map, nchw.maps.at(name)));
    }
    EXPECT_NE(blocked.maps.at("p2").grad_fn()->name().find("FromBlocked"), std::string::npos)
        << "p2 was not computed on blocked maps: " << blocked.maps.at("p2").grad_fn()->name();
    const GradientDiff grads = compare_gradients(blocked, nchw);
    std::cout << "[ layout ] " << k.norm << " R" << k.depth << "-FPN (" << k.top_block
              << ") training, blocked (auto) vs NCHW (direct), max diff / max |value|: levels "
              << worst_map << ", parameter gradients " << grads.max << " (in norm " << grads.norm
              << ")\n";
    EXPECT_LT(worst_map, 2e-5);
    expect_gradients_agree(grads, k.norm != "FrozenBN");
  }
}

}  // namespace
}  // namespace detkit::modeling
