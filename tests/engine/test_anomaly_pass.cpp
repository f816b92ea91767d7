// The anomaly pass names the first op whose output went non-finite, with its module, besides the
// parameters and the previous step's gradients that already are; a finite pass says so.
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include <iostream>
#include <limits>
#include <stdexcept>

#include "detkit/engine/anomaly_pass.h"

namespace detkit::engine {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// x -> first -> relu -> (times `scale`) -> second.
struct TwoLayers : torch::nn::Module {
  TwoLayers()
      : first(register_module("first", torch::nn::Linear(4, 4))),
        second(register_module("second", torch::nn::Linear(4, 4))) {}
  at::Tensor forward(const at::Tensor& x, double scale = 1.0) {
    return second->forward(at::relu(first->forward(x)) * scale).sum();
  }
  torch::nn::Linear first, second;
};

// first(x) = 5 everywhere for x = ones.
void set_first_to_ones(TwoLayers& net) {
  torch::NoGradGuard no_grad;
  net.first->weight.fill_(1.0);
  net.first->bias.fill_(1.0);
}

std::string report_of(TwoLayers& net, const at::Tensor& x, double scale = 1.0) {
  const std::string report = anomaly_report(net, [&] { net.forward(x, scale); });
  std::cout << "[ report ] " << report << "\n";
  return report;
}

void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << text << "' lacks '" << part << "'";
}

TEST(AnomalyPass, AFinitePassSaysSo) {
  torch::manual_seed(0);
  TwoLayers net;
  EXPECT_EQ(report_of(net, at::ones({2, 4})),
            "anomaly pass: this batch's forward pass, run again, kept every op's output finite");
}

TEST(AnomalyPass, NamesTheOpAndTheModuleWhoseWeightOverflowed) {
  torch::manual_seed(0);
  TwoLayers net;
  set_first_to_ones(net);
  {
    torch::NoGradGuard no_grad;
    net.second->weight.fill_(3e38);  // finite, but 5 x 3e38 is not
  }
  const std::string report = report_of(net, at::ones({2, 4}));
  expect_has(report, "the first non-finite output of this batch's forward pass, run again: "
                     "aten::addmm in module second");
  EXPECT_EQ(report.find("already non-finite"), std::string::npos) << report;
}

TEST(AnomalyPass, AnOpWithoutParametersIsPlacedAfterTheLastModuleUsed) {
  torch::manual_seed(0);
  TwoLayers net;
  set_first_to_ones(net);
  // relu(first(x)) = 5; times 1e308 (a double scalar, inf once converted to float).
  const std::string report = report_of(net, at::ones({2, 4}), 1e308);
  expect_has(report, "run again: aten::mul (its inner aten::copy_), after module first");
}

TEST(AnomalyPass, ListsNonFiniteParametersAndThePreviousStepsGradients) {
  torch::manual_seed(0);
  TwoLayers net;
  {
    torch::NoGradGuard no_grad;
    net.first->bias[2] = kNaN;
  }
  net.second->weight.mutable_grad() = at::full({4, 4}, kNaN);
  const std::string report = report_of(net, at::ones({2, 4}));
  expect_has(report, "anomaly pass: parameters and buffers already non-finite: 1 (the first: "
                     "first.bias); non-finite gradients of the previous step: 1 (the first: "
                     "second.weight); the first non-finite output of this batch's forward pass, "
                     "run again: aten::addmm (its inner aten::copy_) in module first");
}

TEST(AnomalyPass, AnErrorOfThePassIsReportedAfterWhatItFound) {
  torch::manual_seed(0);
  TwoLayers net;
  set_first_to_ones(net);
  const std::string report = anomaly_report(net, [&] {
    net.forward(at::ones({2, 4}), 1e308);
    throw std::runtime_error("Predicted boxes or scores contain Inf/NaN. Training has diverged.");
  });
  expect_has(report, "run again: aten::mul (its inner aten::copy_), after module first; the pass "
                     "run again stopped on: "
                     "Predicted boxes or scores contain Inf/NaN. Training has diverged.");
  // Each pass starts afresh.
  EXPECT_EQ(report_of(net, at::ones({2, 4})),
            "anomaly pass: this batch's forward pass, run again, kept every op's output finite");
}

}  // namespace
}  // namespace detkit::engine
