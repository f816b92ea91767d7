// Conv2d reports each norm layer it runs, with the values per channel of its input, to the
// recorder open on its thread: once per call, nothing for a norm folded into the convolution
// (inference) or without a norm, nothing outside a recorder; recorders nest.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "detkit/layers/conv2d.h"
#include "detkit/layers/norm_input_recorder.h"

namespace detkit::layers {
namespace {

TEST(NormInputRecorder, ConvWithANormReportsItsInputSizePerCall) {
  Conv2d bn(Conv2dOptions(3, 4, 3).stride(2).norm("BN"));
  Conv2d gn(Conv2dOptions(4, 32, 1).norm("GN"));
  Conv2d plain(Conv2dOptions(32, 2, 1));
  const torch::nn::Module* bn_norm = bn->named_children()["norm"].get();
  const torch::nn::Module* gn_norm = gn->named_children()["norm"].get();
  const at::Tensor x = at::randn({2, 3, 9, 7});
  bn->forward(x);  // no recorder: nothing kept anywhere
  NormInputRecorder recorder;
  plain->forward(gn->forward(bn->forward(x)));  // bn's output: (2, 4, 4, 3)
  bn->forward(at::randn({1, 3, 5, 5}));         // (1, 4, 2, 2)
  EXPECT_EQ(recorder.calls().size(), 2u);
  EXPECT_EQ(recorder.calls().at(bn_norm), (std::vector<int64_t>{24, 4}));
  EXPECT_EQ(recorder.calls().at(gn_norm), (std::vector<int64_t>{24}));
  {
    NormInputRecorder inner;
    bn->forward(x);
    EXPECT_EQ(inner.calls().at(bn_norm).size(), 1u);
  }
  EXPECT_EQ(recorder.calls().at(bn_norm).size(), 2u) << "the inner recorder took that call";
  recorder.clear();
  bn->eval();
  {
    at::NoGradGuard no_grad;  // BN in eval is folded into the convolution: no norm runs
    bn->forward(x);
  }
  EXPECT_TRUE(recorder.calls().empty());
  bn->forward(x);  // eval with gradients: the norm runs on running statistics
  EXPECT_EQ(recorder.calls().at(bn_norm), (std::vector<int64_t>{24}));
}

}  // namespace
}  // namespace detkit::layers
