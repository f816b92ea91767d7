// SGD's one-pass float32 update against torch.optim.SGD's arithmetic written as ATen ops (the
// single-tensor path): bit for bit, over sizes with vector tails and sizes split across threads.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "detkit/solver/sgd.h"
#include "tests/solver/sgd_reference.h"

namespace detkit::solver {
namespace {

struct Hyper {
  double lr = 0.02, momentum = 0.9, dampening = 0, weight_decay = 1e-4;
  bool nesterov = false;
};

using testing::sgd_reference_step;

// Three steps of SGD and of the reference from the same start; returns the largest difference
// seen in the parameter or the momentum buffer.
double max_difference(int64_t n, const Hyper& h) {
  torch::manual_seed(n);
  at::Tensor p = torch::randn({n}).requires_grad_(true);
  at::Tensor expected = p.detach().clone();
  at::Tensor expected_buf;
  SGD sgd({ParamGroup{{p}, {"p"}, std::nullopt, std::nullopt}}, SGDOptions(h.lr)
                                                                    .momentum(h.momentum)
                                                                    .dampening(h.dampening)
                                                                    .weight_decay(h.weight_decay)
                                                                    .nesterov(h.nesterov));
  double worst = 0;
  for (int step = 0; step < 3; ++step) {
    at::Tensor grad = torch::randn({n});
    p.mutable_grad() = grad.clone();
    sgd.step();
    sgd_reference_step(expected, grad, expected_buf, h);
    worst = std::max(worst, (p.detach() - expected).abs().max().item<double>());
    if (h.momentum != 0) {
      const at::Tensor& buf = sgd.param_groups()[0].momentum_buffers[0];
      worst = std::max(worst, (buf - expected_buf).abs().max().item<double>());
      EXPECT_TRUE(torch::equal(buf, expected_buf)) << "buffer, n " << n << " step " << step;
    }
    EXPECT_TRUE(torch::equal(p.detach(), expected)) << "n " << n << " step " << step;
  }
  return worst;
}

TEST(SgdKernel, FloatParametersMatchAtenOpByOpBitForBit) {
  std::vector<std::pair<std::string, Hyper>> cases = {
      {"momentum + weight decay", Hyper{}},
      {"plain", Hyper{0.1, 0, 0, 0, false}},
      {"weight decay only", Hyper{0.1, 0, 0, 5e-3, false}},
      {"dampening", Hyper{0.05, 0.9, 0.3, 1e-4, false}},
      {"nesterov", Hyper{0.05, 0.8, 0, 1e-3, true}},
  };
  // 1 and 17: scalar tails only / a vector plus a tail; 100003: several threads' chunks.
  for (const auto& [name, h] : cases) {
    double worst = 0;
    for (int64_t n : {1, 17, 1000, 100003}) worst = std::max(worst, max_difference(n, h));
    std::cout << name << ": max difference from ATen op by op " << worst << "\n";
    EXPECT_EQ(worst, 0) << name;
  }
}

TEST(SgdKernel, OtherParametersTakeTheOpByOpPathWithTheSameValues) {
  // A transposed (non-contiguous) parameter and a double one are updated op by op; the values are
  // those of the contiguous float32 parameter updated in one pass.
  torch::manual_seed(0);
  at::Tensor start = torch::randn({6, 5});
  at::Tensor fused = start.clone().requires_grad_(true);
  at::Tensor strided = start.t().contiguous().t().requires_grad_(true);
  ASSERT_FALSE(strided.is_contiguous());
  at::Tensor dbl = start.to(torch::kDouble).requires_grad_(true);
  SGD sgd({ParamGroup{
              {fused, strided, dbl}, {"fused", "strided", "double"}, std::nullopt, std::nullopt}},
          SGDOptions(0.1).momentum(0.9).weight_decay(1e-2));
  for (int step = 0; step < 2; ++step) {
    at::Tensor grad = torch::randn({6, 5});
    fused.mutable_grad() = grad.clone();
    strided.mutable_grad() = grad.clone();
    dbl.mutable_grad() = grad.to(torch::kDouble);
    sgd.step();
  }
  EXPECT_TRUE(torch::equal(fused.detach(), strided.detach()));
  EXPECT_TRUE(torch::allclose(fused.detach().to(torch::kDouble), dbl.detach(), 1e-6, 1e-6));
}

TEST(SgdKernel, AStepBetweenForwardAndBackwardIsRefusedAsWithAtenOps) {
  // The update writes the parameter through its pointer; it bumps the version as add_ would, so a
  // graph that saved the old values does not silently use the new ones.
  at::Tensor p = torch::randn({8}).requires_grad_(true);
  SGD sgd({ParamGroup{{p}, {"p"}, std::nullopt, std::nullopt}}, SGDOptions(0.1).momentum(0.9));
  at::Tensor loss = (p * p).sum();
  p.mutable_grad() = torch::ones({8});
  sgd.step();
  EXPECT_THROW(loss.backward(), c10::Error);
}

}  // namespace
}  // namespace detkit::solver
