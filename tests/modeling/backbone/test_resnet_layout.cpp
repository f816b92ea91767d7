// ResNet's maps under CONV_ALGORITHM auto: channels-last in eval mode with a BatchNorm-family norm
// (libtorch's oneDNN convolutions read and write them without reordering), with the NCHW
// network's values up to float32 rounding; NCHW in training, for GroupNorm in eval mode and under
// `direct`.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <string>

#include "detkit/layers/conv2d.h"
#include "detkit/modeling/backbone/resnet.h"

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

}  // namespace
}  // namespace detkit::modeling
