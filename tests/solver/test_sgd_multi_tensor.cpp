// SGD's multi-tensor path (torch's at::_fused_sgd_, which SGD runs for CUDA float parameters)
// against torch.optim.SGD's arithmetic op by op: the kernel itself on CPU tensors (torch has a CPU
// kernel of the same op), every case of hyper-parameters, the first step starting the buffers;
// and SGD on a GPU against SGD on the CPU, which skips saying why where no GPU is visible.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "detkit/solver/sgd.h"
#include "detkit/solver/sgd_multi_tensor.h"
#include "detkit/utils/cuda_build.h"
#include "tests/solver/sgd_reference.h"

namespace detkit::solver {
namespace {

using testing::sgd_reference_step;

TEST(SgdMultiTensor, TheKernelIsSgdsArithmetic) {
  const std::vector<std::pair<std::string, MultiTensorSgd>> cases = {
      {"momentum + weight decay", {0.02, 0.9, 0, 1e-4, false}},
      {"plain", {0.1, 0, 0, 0, false}},
      {"dampening", {0.05, 0.9, 0.3, 1e-4, false}},
      {"nesterov", {0.05, 0.8, 0, 1e-3, true}},
  };
  for (const auto& [name, h] : cases) {
    torch::manual_seed(1);
    std::vector<at::Tensor> params, expected, buffers, expected_buffers(3);
    for (int64_t n : {1, 17, 100003}) {
      params.push_back(torch::randn({n}));
      expected.push_back(params.back().clone());
      buffers.push_back(torch::empty({n}));
    }
    double worst = 0;
    for (int step = 0; step < 3; ++step) {
      std::vector<at::Tensor> grads;
      for (const at::Tensor& p : params) grads.push_back(torch::randn(p.sizes()));
      multi_tensor_sgd(params, grads, buffers, h, step == 0);
      for (size_t i = 0; i < params.size(); ++i) {
        sgd_reference_step(expected[i], grads[i], expected_buffers[i], h);
        worst = std::max(worst, (params[i] - expected[i]).abs().max().item<double>());
        if (h.momentum != 0)
          worst = std::max(worst, (buffers[i] - expected_buffers[i]).abs().max().item<double>());
      }
    }
    std::cout << "[ sgd multi-tensor ] " << name << ": max difference from op by op " << worst
              << "\n";
    EXPECT_LE(worst, 1e-6) << name;  // fused multiply-adds where the ops round twice
  }
  EXPECT_FALSE(multi_tensor_sgd_takes(torch::zeros({2})));  // CPU tensors take SGD's own kernel
}

TEST(SgdMultiTensor, SgdOnAGpuIsSgdOnTheCpu) {
  if (visible_gpu_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  torch::manual_seed(2);
  const at::Tensor start = torch::randn({300, 7});
  at::Tensor cpu = start.clone().requires_grad_(true);
  at::Tensor gpu = start.to(at::kCUDA).requires_grad_(true);
  at::Tensor other = start.to(at::kCUDA).t().requires_grad_(true);  // strided: op by op
  const auto options = SGDOptions(0.05).momentum(0.9).weight_decay(1e-4);
  SGD on_cpu({ParamGroup{{cpu}, {"p"}, std::nullopt, std::nullopt}}, options);
  SGD on_gpu({ParamGroup{{gpu, other}, {"p", "q"}, std::nullopt, std::nullopt}}, options);
  double worst = 0;
  for (int step = 0; step < 3; ++step) {
    const at::Tensor grad = torch::randn({300, 7});
    cpu.mutable_grad() = grad.clone();
    gpu.mutable_grad() = grad.to(at::kCUDA);
    other.mutable_grad() = grad.to(at::kCUDA).t();
    on_cpu.step();
    on_gpu.step();
    worst = std::max(worst, (gpu.detach().cpu() - cpu.detach()).abs().max().item<double>());
    worst = std::max(worst, (other.detach().t().cpu() - cpu.detach()).abs().max().item<double>());
  }
  std::cout << "[ sgd multi-tensor ] CUDA against CPU: max difference " << worst << "\n";
  EXPECT_LE(worst, 1e-6);
}

}  // namespace
}  // namespace detkit::solver
