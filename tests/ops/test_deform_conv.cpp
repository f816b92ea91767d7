// detkit::ops::deform_conv2d: forward and every gradient against torchvision's
// (../shared/fixtures/deform_conv, its README), zero offsets against at::conv2d, weight groups
// against separate convolutions, finite differences, autograd, empty batches and argument errors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "detkit/ops/deform_conv.h"
#include "tests/support/c10_error_of.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::max_abs_diff;

namespace detkit::ops {
namespace {

// Stride, padding, dilation (each (h, w)), weight groups and offset groups of one call.
struct DeformSettings {
  int64_t stride_h = 1, stride_w = 1, pad_h = 1, pad_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1, offset_groups = 1;
};

at::Tensor deform(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& offset,
                  const c10::optional<at::Tensor>& mask, const c10::optional<at::Tensor>& bias,
                  const DeformSettings& s) {
  return deform_conv2d(input, weight, offset, mask, bias, s.stride_h, s.stride_w, s.pad_h, s.pad_w,
                       s.dilation_h, s.dilation_w, s.groups, s.offset_groups);
}

int64_t deform_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
}

// ---- Parity with torchvision (the fixture). ----

const std::string kDeformFixture = std::string(DETKIT_SHARED_DIR) + "/fixtures/deform_conv/";

std::map<std::string, at::Tensor> load_deform_fixture_tensors() {
  std::ifstream file(kDeformFixture + "outputs.pth", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)),
                                std::istreambuf_iterator<char>());
  std::map<std::string, at::Tensor> tensors;
  for (const auto& entry : torch::pickle_load(bytes).toGenericDict())
    tensors[entry.key().toStringRef()] = entry.value().toTensor();
  return tensors;
}

TEST(DeformConvParity, ForwardAndGradientsMatchTorchvision) {
  if (!std::filesystem::exists(kDeformFixture + "outputs.pth"))
    GTEST_SKIP() << "shared fixture absent: " << kDeformFixture;
  const auto tensors = load_deform_fixture_tensors();
  const nlohmann::json meta = nlohmann::json::parse(std::ifstream(kDeformFixture + "outputs.json"));
  ASSERT_EQ(meta["cases"].size(), 12u);
  for (const nlohmann::json& c : meta["cases"]) {
    const std::string name = c["name"];
    DeformSettings s;
    s.stride_h = c["stride"][0], s.stride_w = c["stride"][1];
    s.pad_h = c["padding"][0], s.pad_w = c["padding"][1];
    s.dilation_h = c["dilation"][0], s.dilation_w = c["dilation"][1];
    s.groups = c["groups"], s.offset_groups = c["deformable_groups"];
    const bool modulated = c["modulated"], with_bias = c["bias"];
    // The README's tolerances, relative to each tensor's largest value.
    for (const std::string dtype : {"float64", "float32"}) {
      const double tolerance = dtype == "float64" ? 1e-10 : 1e-5;
      auto fixture = [&](const std::string& tensor) {
        return tensors.at(name + "." + dtype + "." + tensor);
      };
      std::map<std::string, at::Tensor> leaves = {{"input", fixture("input")},
                                                  {"weight", fixture("weight")},
                                                  {"offset", fixture("offset")}};
      if (modulated) leaves["mask"] = fixture("mask");
      if (with_bias) leaves["bias"] = fixture("bias");
      for (auto& entry : leaves) entry.second = entry.second.clone().requires_grad_(true);
      auto optional_leaf = [&](const std::string& key) -> c10::optional<at::Tensor> {
        if (leaves.count(key)) return leaves.at(key);
        return c10::nullopt;
      };
      const at::Tensor output = deform(leaves["input"], leaves["weight"], leaves["offset"],
                                       optional_leaf("mask"), optional_leaf("bias"), s);
      (output * fixture("grad_output")).sum().backward();

      std::map<std::string, at::Tensor> got = {{"output", output.detach()}};
      for (const auto& [key, t] : leaves) got["grad_" + key] = t.grad();
      ASSERT_EQ(got.size(), leaves.size() + 1);
      std::string worst_name;
      double worst = 0;
      std::cout << "deform_conv2d vs torchvision, " << name << " " << dtype << ":";
      for (const auto& [key, t] : got) {
        ASSERT_TRUE(t.defined()) << name << " " << dtype << " " << key;
        EXPECT_EQ(t.scalar_type(), fixture(key).scalar_type()) << name << " " << key;
        const double relative =
            max_abs_diff(t, fixture(key)) / fixture(key).abs().max().item<double>();
        std::cout << " " << key << " " << relative;
        EXPECT_LE(relative, tolerance) << name << " " << dtype << " " << key;
        if (relative >= worst) worst = relative, worst_name = key;
      }
      std::cout << "; largest " << worst << " (" << worst_name << ", relative to max |value|)\n";

      // Where offsets are whole numbers some taps sample at exactly -1: the fixture's cases
      // exercise torchvision's one-sided slope there, which Detectron2's CUDA rule zeroes.
      const std::string cuda_rule_key = name + "." + dtype + ".grad_offset_detectron2_cuda_rule";
      if (tensors.count(cuda_rule_key)) {
        const at::Tensor grad_offset = got.at("grad_offset");
        const double scale = grad_offset.abs().max().item<double>();
        const int64_t differs =
            ((grad_offset - tensors.at(cuda_rule_key)).abs() > tolerance * scale)
                .sum()
                .item<int64_t>();
        EXPECT_EQ(differs, c["offset_grad_entries_cuda_rule_differs"][dtype].get<int64_t>())
            << name << " " << dtype;
        EXPECT_GT(differs, 0) << name << " " << dtype;
      }
    }
  }
}

// ---- Against ordinary convolution. ----

TEST(DeformConv, ZeroOffsetsGiveConv2d) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  const at::Tensor x = at::randn({2, 4, 9, 11}, gen).to(at::kDouble);
  for (const DeformSettings& s : {DeformSettings{}, DeformSettings{2, 1, 2, 0, 2, 1, 2, 2},
                                  DeformSettings{1, 2, 0, 1, 1, 2, 2, 4}}) {
    const at::Tensor w = at::randn({6, 4 / s.groups, 3, 2}, gen).to(at::kDouble);
    const at::Tensor b = at::randn({6}, gen).to(at::kDouble);
    const int64_t oh = deform_out_size(9, 3, s.stride_h, s.pad_h, s.dilation_h);
    const int64_t ow = deform_out_size(11, 2, s.stride_w, s.pad_w, s.dilation_w);
    const at::Tensor offset = at::zeros({2, 2 * s.offset_groups * 6, oh, ow}, x.options());
    const at::Tensor want = at::conv2d(x, w, b, {s.stride_h, s.stride_w}, {s.pad_h, s.pad_w},
                                       {s.dilation_h, s.dilation_w}, s.groups);
    const at::Tensor got = deform(x, w, offset, c10::nullopt, b, s);
    const double diff = max_abs_diff(got, want) / want.abs().max().item<double>();
    std::cout << "deform_conv2d with zero offsets vs conv2d, groups " << s.groups
              << ", offset_groups " << s.offset_groups << ": max |diff| " << diff
              << " (relative to max |value|)\n";
    EXPECT_LT(diff, 1e-13);
    // A mask of ones is v1.
    const at::Tensor ones = at::ones({2, s.offset_groups * 6, oh, ow}, x.options());
    EXPECT_TRUE(at::equal(deform(x, w, offset, ones, b, s), got));
  }
}

// Weight groups: each group is a deformable convolution of its own channels.
TEST(DeformConv, WeightGroupsAreSeparateConvolutions) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(12);
  const DeformSettings s{1, 1, 1, 1, 1, 1, 2, 1};
  const at::Tensor x = at::randn({2, 6, 7, 8}, gen).to(at::kDouble);
  const at::Tensor w = at::randn({4, 3, 3, 3}, gen).to(at::kDouble);
  const at::Tensor b = at::randn({4}, gen).to(at::kDouble);
  const at::Tensor offset = 2 * at::randn({2, 18, 7, 8}, gen).to(at::kDouble);
  const at::Tensor mask = at::rand({2, 9, 7, 8}, gen).to(at::kDouble);
  const at::Tensor got = deform(x, w, offset, mask, b, s);
  DeformSettings one = s;
  one.groups = 1;
  const at::Tensor want =
      at::cat({deform(x.slice(1, 0, 3), w.slice(0, 0, 2), offset, mask, b.slice(0, 0, 2), one),
               deform(x.slice(1, 3, 6), w.slice(0, 2, 4), offset, mask, b.slice(0, 2, 4), one)},
              1);
  EXPECT_LT(max_abs_diff(got, want), 1e-12);
}

// ---- Gradients. ----

// Central differences of sum(deform_conv2d(...) * v) against the backward op, in double, with
// offsets away from whole numbers (the interpolation's kinks).
TEST(DeformConv, BackwardMatchesFiniteDifferencesInDouble) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(13);
  const DeformSettings s{2, 1, 1, 1, 1, 2, 2, 2};
  const int64_t oh = deform_out_size(5, 2, 2, 1, 1), ow = deform_out_size(6, 2, 1, 1, 2);
  std::vector<at::Tensor> args = {
      at::randn({2, 4, 5, 6}, gen).to(at::kDouble),                // input
      at::randn({4, 2, 2, 2}, gen).to(at::kDouble),                // weight
      (at::rand({2, 16, oh, ow}, gen) * 5 - 2.5).to(at::kDouble),  // offset
      at::rand({2, 8, oh, ow}, gen).to(at::kDouble),               // mask
      at::randn({4}, gen).to(at::kDouble)};                        // bias
  args[2] = args[2].round() + 0.2 + 0.6 * at::rand(args[2].sizes(), gen).to(at::kDouble);
  const at::Tensor v = at::randn({2, 4, oh, ow}, gen).to(at::kDouble);
  auto loss = [&](const std::vector<at::Tensor>& a) {
    return (deform(a[0], a[1], a[2], a[3], a[4], s) * v).sum().item<double>();
  };
  auto [gi, gw, go, gm, gb] = deform_conv2d_backward(
      v, args[0], args[1], args[2], args[3], s.stride_h, s.stride_w, s.pad_h, s.pad_w, s.dilation_h,
      s.dilation_w, s.groups, s.offset_groups, {true, true, true, true, true});
  const std::vector<at::Tensor> analytic = {gi, gw, go, gm, gb};
  const char* names[] = {"input", "weight", "offset", "mask", "bias"};
  const double eps = 1e-6;
  for (size_t a = 0; a < args.size(); ++a) {
    ASSERT_EQ(analytic[a].sizes(), args[a].sizes()) << names[a];
    double worst = 0;
    for (int64_t i = 0; i < args[a].numel(); ++i) {
      std::vector<at::Tensor> plus = args, minus = args;
      plus[a] = args[a].clone(), minus[a] = args[a].clone();
      plus[a].view(-1)[i] += eps;
      minus[a].view(-1)[i] -= eps;
      const double numeric = (loss(plus) - loss(minus)) / (2 * eps);
      worst = std::max(worst, std::abs(numeric - analytic[a].view(-1)[i].item<double>()));
    }
    std::cout << "deform_conv2d gradcheck, " << names[a] << ": max |analytic - numeric| " << worst
              << "\n";
    EXPECT_LT(worst, 1e-6) << names[a];
  }
}

TEST(DeformConv, AutogradComputesOnlyTheGradientsAsked) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(14);
  const DeformSettings s;
  const at::Tensor x = at::randn({1, 2, 5, 5}, gen);
  const at::Tensor w = at::randn({3, 2, 3, 3}, gen);
  const at::Tensor offset = (at::randn({1, 18, 5, 5}, gen)).requires_grad_(true);
  const at::Tensor b = at::randn({3}, gen).requires_grad_(true);
  const at::Tensor y = deform(x, w, offset, c10::nullopt, b, s);
  ASSERT_TRUE(y.requires_grad());
  const at::Tensor v = at::randn(y.sizes(), gen);
  (y * v).sum().backward();
  auto [gi, gw, go, gm, gb] =
      deform_conv2d_backward(v, x, w, offset.detach(), c10::nullopt, 1, 1, 1, 1, 1, 1, 1, 1,
                             {false, false, true, false, true});
  EXPECT_FALSE(gi.defined() || gw.defined() || gm.defined());
  ASSERT_TRUE(offset.grad().defined() && b.grad().defined());
  EXPECT_TRUE(at::allclose(offset.grad(), go));
  EXPECT_TRUE(at::allclose(b.grad(), gb));
  EXPECT_GT(go.abs().sum().item<float>(), 0.0f);
}

TEST(DeformConv, DoubleBackwardIsRefused) {
  const at::Tensor x = at::randn({1, 1, 4, 4}).requires_grad_(true);
  const at::Tensor y = deform(x, at::randn({1, 1, 3, 3}), at::rand({1, 18, 4, 4}), c10::nullopt,
                              c10::nullopt, DeformSettings{});
  EXPECT_THROW(torch::autograd::grad({y.pow(2).sum()}, {x}, {}, true, true), c10::Error);
}

// ---- Edge cases and errors. ----

TEST(DeformConv, EmptyBatchGivesEmptyOutputAndZeroGradients) {
  const at::Tensor x = at::randn({0, 4, 6, 6}).requires_grad_(true);
  const at::Tensor w = at::randn({5, 4, 3, 3}).requires_grad_(true);
  const at::Tensor b = at::randn({5}).requires_grad_(true);
  const at::Tensor offset = at::randn({0, 36, 6, 6}).requires_grad_(true);
  const at::Tensor mask = at::rand({0, 18, 6, 6}).requires_grad_(true);
  DeformSettings s;
  s.offset_groups = 2;
  const at::Tensor y = deform(x, w, offset, mask, b, s);
  EXPECT_EQ(y.sizes(), at::IntArrayRef({0, 5, 6, 6}));
  y.sum().backward();
  EXPECT_EQ(x.grad().sizes(), x.sizes());
  EXPECT_EQ(offset.grad().sizes(), offset.sizes());
  EXPECT_EQ(mask.grad().sizes(), mask.sizes());
  EXPECT_TRUE(at::equal(w.grad(), at::zeros_like(w)));
  EXPECT_TRUE(at::equal(b.grad(), at::zeros_like(b)));
}

TEST(DeformConv, FarOffsetsSampleZeros) {
  const at::Tensor x = at::randn({1, 2, 4, 4});
  const at::Tensor offset = at::full({1, 18, 4, 4}, 50.0f);
  const at::Tensor b = at::tensor({0.5f, -1.5f});
  const at::Tensor y = deform(x, at::randn({2, 2, 3, 3}), offset, c10::nullopt, b, {});
  EXPECT_TRUE(at::equal(y, b.view({1, 2, 1, 1}).expand_as(y)));
}

TEST(DeformConv, RejectsBadArgumentsNamingThem) {
  const at::Tensor x = at::randn({2, 4, 7, 9}), w = at::randn({5, 4, 3, 3});
  const at::Tensor offset = at::randn({2, 18, 7, 9}), mask = at::rand({2, 9, 7, 9});
  const DeformSettings s;
  auto error = [&](const at::Tensor& input, const at::Tensor& weight, const at::Tensor& off,
                   const c10::optional<at::Tensor>& m, const c10::optional<at::Tensor>& bias,
                   const DeformSettings& settings) {
    return detkit::testing::c10_error_of([&] { deform(input, weight, off, m, bias, settings); });
  };
  auto expect_says = [](const std::string& message, const std::string& part) {
    EXPECT_NE(message.find(part), std::string::npos) << "message: " << message;
  };
  expect_says(error(x, w, offset.slice(1, 0, 17), c10::nullopt, c10::nullopt, s),
              "offset has 17 channels, expected 2 * offset_groups * kh * kw = 18");
  expect_says(error(x, w, offset.slice(2, 0, 6), c10::nullopt, c10::nullopt, s),
              "offset is 6 x 9, expected the output size 7 x 9");
  expect_says(error(x, w, offset.slice(0, 0, 1), c10::nullopt, c10::nullopt, s),
              "offset has batch size 1, expected input's 2");
  expect_says(error(x, w, offset, mask.slice(1, 0, 8), c10::nullopt, s),
              "mask has 8 channels, expected offset_groups * kh * kw = 9");
  expect_says(error(x, w, offset, mask[0], c10::nullopt, s), "mask must be (N,");
  expect_says(error(x, w.slice(1, 0, 3), offset, c10::nullopt, c10::nullopt, s),
              "weight has 3 input channels, expected in_channels / groups = 4 / 1");
  expect_says(error(x, w, offset, c10::nullopt, at::zeros({4}), s),
              "bias must be (out_channels) = (5), got sizes [4]");
  expect_says(error(x[0], w, offset, c10::nullopt, c10::nullopt, s),
              "input must be (N, C, H, W), got sizes [4, 7, 9]");
  expect_says(error(x, w, offset.to(at::kDouble), c10::nullopt, c10::nullopt, s),
              "offset has dtype Double, expected input's Float");
  expect_says(error(x.to(at::kHalf), w, offset, c10::nullopt, c10::nullopt, s),
              "input must be float or double, got Half");
  DeformSettings bad = s;
  bad.groups = 3;
  expect_says(error(x, w, offset, c10::nullopt, c10::nullopt, bad),
              "input has 4 channels, not divisible by groups = 3");
  bad = s, bad.groups = 2;
  expect_says(error(x, at::randn({5, 2, 3, 3}), offset, c10::nullopt, c10::nullopt, bad),
              "weight has 5 output channels, not divisible by groups = 2");
  bad = s, bad.offset_groups = 3;
  expect_says(error(x, w, at::randn({2, 54, 7, 9}), c10::nullopt, c10::nullopt, bad),
              "input has 4 channels, not divisible by offset_groups = 3");
  bad = s, bad.stride_w = 0;
  expect_says(error(x, w, offset, c10::nullopt, c10::nullopt, bad),
              "stride must be positive, got (1, 0)");
  bad = s, bad.pad_h = 0, bad.dilation_h = 4;
  expect_says(error(x, w, offset, c10::nullopt, c10::nullopt, bad),
              "input is 7 x 9, smaller than the dilated kernel 9 x 3");
  const std::string backward_error = detkit::testing::c10_error_of([&] {
    deform_conv2d_backward(at::randn({2, 5, 7, 8}), x, w, offset, c10::nullopt, 1, 1, 1, 1, 1, 1, 1,
                           1, {true, true, true, false, false});
  });
  expect_says(backward_error, "grad has sizes [2, 5, 7, 8], expected the output's [2, 5, 7, 9]");
}

}  // namespace
}  // namespace detkit::ops
