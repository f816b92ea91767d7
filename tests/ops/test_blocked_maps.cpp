// detkit::ops blocked maps (nChw16c): layout changes exact both ways; convolutions (direct and
// Winograd, strides, padding, dilation, bias) and training BatchNorm (alone and with its ReLU
// fused), forward and every gradient, against at::conv2d / at::batch_norm on the same values in
// NCHW, with the max differences printed; a first convolution from plain images; running
// statistics as libtorch updates them; GroupNorm (alone and with its ReLU) against
// at::group_norm; max pooling; nearest 2x upsampling. Skipped on CPUs without AVX-512.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <limits>
#include <string>

#include "detkit/ops/blocked_maps.h"
#include "tests/support/c10_error_of.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::relative_error;

namespace detkit::ops {
namespace {

#define SKIP_WITHOUT_KERNELS()   \
  if (!blocked_maps_available()) \
  GTEST_SKIP() << "oneDNN has no AVX-512 kernels for blocked maps on this CPU (see lscpu)"

// max |a - ref| / max |ref|

TEST(BlockedMaps, LayoutChangesAreExactAndSixteenChannelsInnermost) {
  SKIP_WITHOUT_KERNELS();
  torch::manual_seed(0);
  at::Tensor x = at::randn({2, 48, 5, 7});
  at::Tensor b = to_blocked(x);
  ASSERT_TRUE(is_blocked(b));
  EXPECT_EQ(b.sizes(), at::IntArrayRef({2, 3, 5, 7, 16}));
  // channel c of pixel (h, w) sits at [n][c / 16][h][w][c % 16]
  EXPECT_TRUE(at::equal(b, x.reshape({2, 3, 16, 5, 7}).permute({0, 1, 3, 4, 2})));
  EXPECT_TRUE(at::equal(from_blocked(b), x));
  // and the gradients take the opposite way
  at::Tensor xg = x.clone().requires_grad_(true);
  at::Tensor g = at::randn({2, 48, 5, 7});
  from_blocked(to_blocked(xg)).backward(g);
  EXPECT_TRUE(at::equal(xg.grad(), g));
}

TEST(BlockedMaps, ChannelsLastMapsChangeLayoutExactlyBothWays) {
  SKIP_WITHOUT_KERNELS();
  torch::manual_seed(0);
  const at::Tensor x = at::randn({2, 32, 6, 5});
  const at::Tensor b = to_blocked(x);
  // out to channels-last storage, and back from it (as a gradient too)
  const at::Tensor last = from_blocked(b, at::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(last.is_contiguous(at::MemoryFormat::ChannelsLast) && !last.is_contiguous());
  EXPECT_TRUE(at::equal(last, x));
  EXPECT_TRUE(at::equal(to_blocked(x.contiguous(at::MemoryFormat::ChannelsLast)), b));
  at::Tensor xg = x.clone().requires_grad_(true);
  const at::Tensor g = at::randn({2, 32, 6, 5});
  from_blocked(to_blocked(xg), at::MemoryFormat::ChannelsLast)
      .backward(g.contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(at::equal(xg.grad(), g));
  // any other storage (here a strided view) goes through the contiguous form
  const at::Tensor wide = at::randn({2, 32, 6, 10});
  const at::Tensor strided = wide.slice(3, 0, 10, 2);
  EXPECT_TRUE(at::equal(from_blocked(to_blocked(strided)), strided));
  EXPECT_THROW(from_blocked(b, at::MemoryFormat::Preserve), c10::Error);
}

TEST(BlockedMaps, RefusesMapsItCannotHold) {
  SKIP_WITHOUT_KERNELS();
  EXPECT_THROW(to_blocked(at::zeros({1, 24, 4, 4})), c10::Error);  // 24 channels: not by 16
  EXPECT_THROW(to_blocked(at::zeros({1, 32, 4, 4}, at::kDouble)), c10::Error);
  EXPECT_THROW(from_blocked(at::zeros({1, 2, 4, 4, 8})), c10::Error);
  const at::Tensor map = to_blocked(at::zeros({1, 32, 4, 4}));
  EXPECT_THROW(blocked_conv2d(map, at::zeros({16, 32, 1, 1}, at::kBFloat16), {}, 1, 0, 1),
               c10::Error);  // a bfloat16 weight read as float32 would be garbage
  EXPECT_THROW(
      blocked_conv2d(map, at::zeros({16, 32, 1, 1}), at::zeros({16}, at::kDouble), 1, 0, 1),
      c10::Error);
  EXPECT_THROW(blocked_conv2d(map, at::zeros({16, 24, 1, 1}), {}, 1, 0, 1), c10::Error);
  EXPECT_THROW(
      blocked_batch_norm(map, at::ones({32}, at::kBFloat16), at::zeros({32}), {}, {}, 0.1, 1e-5),
      c10::Error);
  // The pairs that remake their normalized map: a plain map, and a convolution whose output a
  // blocked BatchNorm cannot hold, are refused with what is wrong.
  const BatchNormArgs norm{at::ones({32}), at::zeros({32}), {}, {}, 0.1, 1e-5};
  EXPECT_NE(detkit::testing::c10_error_of([&] {
              blocked_batch_norm_relu_conv2d(at::zeros({1, 32, 4, 4}), norm,
                                             at::zeros({16, 32, 1, 1}), {}, 1, 0, 1);
            }).find("blocked map"),
            std::string::npos);
  const BatchNormArgs out_norm{at::ones({24}), at::zeros({24}), {}, {}, 0.1, 1e-5};
  EXPECT_NE(detkit::testing::c10_error_of([&] {
              blocked_batch_norm_relu_conv2d_batch_norm(map, norm, at::zeros({24, 32, 1, 1}), {}, 1,
                                                        0, 1, out_norm);
            }).find("24 output channels"),
            std::string::npos);
  try {
    blocked_conv2d(at::zeros({1, 32, 4, 4}), at::zeros({16, 32, 1, 1}), {}, 1, 0, 1);
    FAIL() << "an NCHW map was taken as a blocked one";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocked map"), std::string::npos) << e.what();
  }
}

struct ConvCase {
  int64_t n, c, o, h, w, k, stride, padding, dilation;
  bool bias;
  std::string name;
};

TEST(BlockedMaps, ConvolutionsAndGradientsAgreeWithConv2d) {
  SKIP_WITHOUT_KERNELS();
  torch::manual_seed(1);
  // A ResNet's 1x1s (plain and strided), its 3x3 (Winograd at stride 1 on large maps, direct
  // when strided or small), a dilated res5 3x3, a stem-like 7x7, and a bias.
  const ConvCase cases[] = {
      {2, 64, 256, 24, 32, 1, 1, 0, 1, false, "1x1"},
      {2, 256, 128, 23, 31, 1, 2, 0, 1, false, "1x1 stride 2, odd map"},
      {2, 64, 64, 24, 32, 3, 1, 1, 1, false, "3x3 (Winograd)"},
      {2, 32, 32, 6, 7, 3, 1, 1, 1, false, "3x3 on a small map (direct)"},
      {2, 64, 64, 25, 33, 3, 2, 1, 1, false, "3x3 stride 2, odd map"},
      {1, 32, 48, 12, 16, 3, 1, 2, 2, true, "3x3 dilation 2, bias"},
      {1, 16, 32, 20, 20, 7, 2, 3, 1, true, "7x7 stride 2, bias"},
      // over kScratchpadPerBatchBytes of Winograd scratchpad for the batch: image by image
      {2, 128, 128, 100, 168, 3, 1, 1, 1, true, "3x3 (Winograd) on a large map, bias"},
  };
  for (const ConvCase& k : cases) {
    SCOPED_TRACE(k.name);
    at::Tensor x = at::randn({k.n, k.c, k.h, k.w}).relu_();
    at::Tensor w = at::randn({k.o, k.c, k.k, k.k}) * std::sqrt(2.0 / (k.k * k.k * k.c));
    at::Tensor b = k.bias ? at::randn({k.o}) * 0.1 : at::Tensor();
    at::Tensor x1 = x.clone().requires_grad_(true), w1 = w.clone().requires_grad_(true);
    at::Tensor b1 = k.bias ? b.clone().requires_grad_(true) : at::Tensor();
    at::Tensor ref = at::conv2d(x1, w1, b1, k.stride, k.padding, k.dilation);
    at::Tensor g = at::randn(ref.sizes());
    ref.backward(g);
    at::Tensor x2 = x.clone().requires_grad_(true), w2 = w.clone().requires_grad_(true);
    at::Tensor b2 = k.bias ? b.clone().requires_grad_(true) : at::Tensor();
    at::Tensor out =
        from_blocked(blocked_conv2d(to_blocked(x2), w2, b2, k.stride, k.padding, k.dilation));
    ASSERT_EQ(out.sizes(), ref.sizes());
    out.backward(g);
    const double e_out = relative_error(out, ref), e_x = relative_error(x2.grad(), x1.grad());
    const double e_w = relative_error(w2.grad(), w1.grad());
    const double e_b = k.bias ? relative_error(b2.grad(), b1.grad()) : 0.0;
    std::cout << "[ blocked conv ] " << k.name << ": max diff / max |value| output " << e_out
              << ", grad input " << e_x << ", grad weight " << e_w << ", grad bias " << e_b
              << std::endl;
    // Direct kernels are libtorch's own (float32 rounding, ~1e-7); Winograd's transforms cost
    // about a decimal digit more (tests/ops/test_winograd_conv2d.cpp).
    for (double e : {e_out, e_x, e_w, e_b}) EXPECT_LT(e, 1e-5);
  }
}

TEST(BlockedMaps, TrainingBatchNormAgreesWithLibtorchAndUpdatesRunningStatistics) {
  SKIP_WITHOUT_KERNELS();
  torch::manual_seed(2);
  const int64_t c = 32;
  at::Tensor x = at::randn({2, c, 9, 11}) * 3 + 1;
  at::Tensor w = at::rand({c}) + 0.5, b = at::randn({c});
  at::Tensor mean0 = at::randn({c}), var0 = at::rand({c}) + 0.5;
  at::Tensor g = at::randn({2, c, 9, 11});
  for (const bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "with ReLU" : "alone");
    at::Tensor x1 = x.clone().requires_grad_(true), w1 = w.clone().requires_grad_(true);
    at::Tensor b1 = b.clone().requires_grad_(true);
    at::Tensor m1 = mean0.clone(), v1 = var0.clone();
    at::Tensor ref = at::batch_norm(x1, w1, b1, m1, v1, /*training=*/true, 0.1, 1e-5, false);
    if (relu) ref = at::relu(ref);
    ref.backward(g);

    at::Tensor x2 = x.clone().requires_grad_(true), w2 = w.clone().requires_grad_(true);
    at::Tensor b2 = b.clone().requires_grad_(true);
    at::Tensor m2 = mean0.clone(), v2 = var0.clone();
    at::Tensor out =
        from_blocked(blocked_batch_norm(to_blocked(x2), w2, b2, m2, v2, 0.1, 1e-5, relu));
    out.backward(g);

    EXPECT_EQ(out.eq(0).sum().item<int64_t>(), ref.eq(0).sum().item<int64_t>());
    const std::pair<const char*, double> errors[] = {
        {"output", relative_error(out, ref)},
        {"grad input", relative_error(x2.grad(), x1.grad())},
        {"grad weight", relative_error(w2.grad(), w1.grad())},
        {"grad bias", relative_error(b2.grad(), b1.grad())},
        {"running mean", relative_error(m2, m1)},
        {"running var", relative_error(v2, v1)}};
    for (const auto& [name, e] : errors) {
      std::cout << "[ blocked batch norm" << (relu ? " + relu" : "") << " ] " << name
                << ": max diff / max |value| " << e << std::endl;
      EXPECT_LT(e, 1e-5) << name;
    }
    EXPECT_FALSE(at::allclose(m2, mean0));  // the statistics moved
  }
  // A NaN makes its channel NaN through the ReLU too, as libtorch's does (oneDNN's fused ReLU
  // alone would give 0 there, and training would go on past a diverged step).
  at::Tensor with_nan = x.clone();
  with_nan[1][5][2][3] = std::numeric_limits<float>::quiet_NaN();
  const at::Tensor ref = at::relu(at::batch_norm(with_nan, w, b, {}, {}, true, 0.1, 1e-5, false));
  const at::Tensor out =
      from_blocked(blocked_batch_norm(to_blocked(with_nan), w, b, {}, {}, 0.1, 1e-5, true));
  EXPECT_TRUE(at::equal(out.isnan(), ref.isnan()));
  EXPECT_GT(out.isnan().sum().item<int64_t>(), 0);
}

// The pair that remakes its normalized map in backward against the two ops apart: the same
// values and gradients, bit for bit (the remake is oneDNN's kernel given the same statistics).
TEST(BlockedMaps, ABatchNormReluConvolutionPairRemadeInBackwardIsTheTwoOpsBitForBit) {
  SKIP_WITHOUT_KERNELS();
  torch::manual_seed(4);
  const int64_t c = 32, o = 48;
  const at::Tensor x = at::randn({2, c, 20, 24}) * 2 + 0.5, g = at::randn({2, o, 20, 24});
  const at::Tensor w = at::rand({c}) + 0.5, b = at::randn({c});
  const at::Tensor conv_w = at::randn({o, c, 3, 3}) * 0.1, conv_b = at::randn({o}) * 0.1;
  struct Run {
    at::Tensor out, grad_x, grad_w, grad_b, grad_conv_w, grad_conv_b, mean, var;
  };
  auto run = [&](bool paired, const at::Tensor& input) {
    Run r;
    at::Tensor x1 = to_blocked(input).detach().requires_grad_(true);
    at::Tensor w1 = w.clone().requires_grad_(true), b1 = b.clone().requires_grad_(true);
    at::Tensor cw = conv_w.clone().requires_grad_(true), cb = conv_b.clone().requires_grad_(true);
    r.mean = at::zeros({c});
    r.var = at::ones({c});
    r.out = from_blocked(
        paired ? blocked_batch_norm_relu_conv2d(x1, {w1, b1, r.mean, r.var, 0.1, 1e-5}, cw, cb, 1,
                                                1, 1)
               : blocked_conv2d(blocked_batch_norm(x1, w1, b1, r.mean, r.var, 0.1, 1e-5, true), cw,
                                cb, 1, 1, 1));
    r.out.backward(g);
    r.grad_x = x1.grad(), r.grad_w = w1.grad(), r.grad_b = b1.grad();
    r.grad_conv_w = cw.grad(), r.grad_conv_b = cb.grad();
    return r;
  };
  const Run apart = run(false, x), paired = run(true, x);
  const at::Tensor Run::*fields[] = {&Run::out,    &Run::grad_x,      &Run::grad_w,
                                     &Run::grad_b, &Run::grad_conv_w, &Run::grad_conv_b,
                                     &Run::mean,   &Run::var};
  for (const auto field : fields) {
    ASSERT_TRUE((paired.*field).defined());
    EXPECT_TRUE(at::equal(paired.*field, apart.*field));
  }
  EXPECT_GT(apart.out.abs().sum().item<double>(), 0.0);
  // A NaN in the map: the two ops apart (the ReLU unfused), so it reaches the output.
  at::Tensor with_nan = x.clone();
  with_nan[0][3][4][5] = std::numeric_limits<float>::quiet_NaN();
  const Run nan_apart = run(false, with_nan), nan_paired = run(true, with_nan);
  EXPECT_TRUE(at::equal(nan_paired.out.isnan(), nan_apart.out.isnan()));
  EXPECT_GT(nan_paired.out.isnan().sum().item<int64_t>(), 0);
}

// A bottleneck's tail (BatchNorm + ReLU, a 1x1 convolution, BatchNorm) whose normalized map and
// convolution output are remade in backward, against the three ops apart: bit for bit, running
// statistics included.
TEST(BlockedMaps, ABottlenecksTailRemadeInBackwardIsItsThreeOpsBitForBit) {
  SKIP_WITHOUT_KERNELS();
  torch::manual_seed(5);
  const int64_t c = 32, o = 64;
  const at::Tensor x = at::randn({2, c, 12, 14}) * 2 + 0.5, g = at::randn({2, o, 12, 14});
  const at::Tensor w = at::rand({c}) + 0.5, b = at::randn({c});
  const at::Tensor conv_w = at::randn({o, c, 1, 1}) * 0.2;
  const at::Tensor out_w = at::rand({o}) + 0.5, out_b = at::randn({o});
  auto run = [&](bool remade, const at::Tensor& input) {
    at::Tensor x1 = to_blocked(input).detach().requires_grad_(true);
    std::vector<at::Tensor> params = {w.clone(), b.clone(), conv_w.clone(), out_w.clone(),
                                      out_b.clone()};
    for (auto& p : params) p.requires_grad_(true);
    std::vector<at::Tensor> running = {at::zeros({c}), at::ones({c}), at::zeros({o}),
                                       at::ones({o})};
    const BatchNormArgs norm{params[0], params[1], running[0], running[1], 0.1, 1e-5};
    const BatchNormArgs out_norm{params[3], params[4], running[2], running[3], 0.1, 1e-5};
    const at::Tensor out = from_blocked(
        remade ? blocked_batch_norm_relu_conv2d_batch_norm(x1, norm, params[2], at::Tensor(), 1, 0,
                                                           1, out_norm)
               : blocked_batch_norm(
                     blocked_conv2d(blocked_batch_norm(x1, params[0], params[1], running[0],
                                                       running[1], 0.1, 1e-5, true),
                                    params[2], at::Tensor(), 1, 0, 1),
                     params[3], params[4], running[2], running[3], 0.1, 1e-5, false));
    out.backward(g);
    std::vector<at::Tensor> all = {out, x1.grad()};
    for (auto& p : params) all.push_back(p.grad());
    all.insert(all.end(), running.begin(), running.end());
    return all;
  };
  const auto apart = run(false, x), remade = run(true, x);
  ASSERT_EQ(apart.size(), remade.size());
  for (size_t i = 0; i < apart.size(); ++i) {
    ASSERT_TRUE(remade[i].defined()) << i;
    EXPECT_TRUE(at::equal(remade[i], apart[i])) << "tensor " << i;
  }
  at::Tensor with_nan = x.clone();
  with_nan[1][7][2][9] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(at::equal(run(true, with_nan)[0].isnan(), run(false, with_nan)[0].isnan()));
  EXPECT_GT(run(true, with_nan)[0].isnan().sum().item<int64_t>(), 0);
}

TEST(BlockedMaps, AFirstConvolutionFromPlainImagesAgreesWithConv2d) {
  SKIP_WITHOUT_KERNELS();
  torch::manual_seed(5);
  // The ResNet stem's conv1 (3 channels in, 7x7 stride 2), and a 3x3 on 3 channels with a bias.
  const ConvCase cases[] = {{2, 3, 64, 40, 52, 7, 2, 3, 1, false, "stem 7x7 stride 2"},
                            {1, 3, 32, 30, 30, 3, 1, 1, 1, true, "3x3, bias"}};
  for (const ConvCase& k : cases) {
    SCOPED_TRACE(k.name);
    const at::Tensor x = at::randn({k.n, k.c, k.h, k.w});
    const at::Tensor w = at::randn({k.o, k.c, k.k, k.k}) * std::sqrt(2.0 / (k.k * k.k * k.c));
    const at::Tensor b = k.bias ? at::randn({k.o}) * 0.1 : at::Tensor();
    at::Tensor x1 = x.clone().requires_grad_(true), w1 = w.clone().requires_grad_(true);
    at::Tensor b1 = k.bias ? b.clone().requires_grad_(true) : at::Tensor();
    const at::Tensor ref = at::conv2d(x1, w1, b1, k.stride, k.padding, k.dilation);
    const at::Tensor g = at::randn(ref.sizes());
    ref.backward(g);
    at::Tensor x2 = x.clone().requires_grad_(true), w2 = w.clone().requires_grad_(true);
    at::Tensor b2 = k.bias ? b.clone().requires_grad_(true) : at::Tensor();
    const at::Tensor blocked = plain_to_blocked_conv2d(x2, w2, b2, k.stride, k.padding, k.dilation);
    ASSERT_TRUE(is_blocked(blocked));
    const at::Tensor out = from_blocked(blocked);
    ASSERT_EQ(out.sizes(), ref.sizes());
    out.backward(g);
    ASSERT_TRUE(x2.grad().is_contiguous());  // the input's gradient in the input's layout
    const double e_out = relative_error(out, ref), e_x = relative_error(x2.grad(), x1.grad());
    const double e_w = relative_error(w2.grad(), w1.grad());
    const double e_b = k.bias ? relative_error(b2.grad(), b1.grad()) : 0.0;
    std::cout << "[ plain -> blocked conv ] " << k.name << ": max diff / max |value| output "
              << e_out << ", grad input " << e_x << ", grad weight " << e_w << ", grad bias " << e_b
              << std::endl;
    for (double e : {e_out, e_x, e_w, e_b}) EXPECT_LT(e, 1e-5);
  }
  EXPECT_THROW(plain_to_blocked_conv2d(at::zeros({1, 3, 8, 8}, at::kDouble),
                                       at::zeros({16, 3, 3, 3}), {}, 1, 1, 1),
               c10::Error);
  EXPECT_THROW(
      plain_to_blocked_conv2d(at::zeros({1, 3, 8, 8}), at::zeros({16, 4, 3, 3}), {}, 1, 1, 1),
      c10::Error);  // weight for 4 channels
}

TEST(BlockedMaps, MaxPoolingIsMaxPool2dBothWays) {
  SKIP_WITHOUT_KERNELS();
  torch::manual_seed(6);
  struct PoolCase {
    int64_t h, w, kernel, stride, padding;
  };
  // The stem's 3x3 / 2 / 1 on even and odd maps, the FPN top block's 1x1 / 2, windows that stop
  // short of the last row (8x9 with 3x3 / 2 / 0), and overlapping stride-1 windows.
  for (const PoolCase& k :
       {PoolCase{24, 32, 3, 2, 1}, PoolCase{25, 33, 3, 2, 1}, PoolCase{7, 9, 1, 2, 0},
        PoolCase{8, 9, 3, 2, 0}, PoolCase{10, 12, 3, 1, 1}, PoolCase{9, 11, 2, 2, 0}}) {
    SCOPED_TRACE(std::to_string(k.h) + "x" + std::to_string(k.w) + " kernel " +
                 std::to_string(k.kernel) + " stride " + std::to_string(k.stride) + " padding " +
                 std::to_string(k.padding));
    // Negative values too: padding must never be a window's maximum.
    const at::Tensor x = at::randn({2, 32, k.h, k.w}) - 1;
    at::Tensor x1 = x.clone().requires_grad_(true), x2 = x.clone().requires_grad_(true);
    const at::Tensor ref = at::max_pool2d(x1, k.kernel, k.stride, k.padding);
    const at::Tensor out =
        from_blocked(blocked_max_pool2d(to_blocked(x2), k.kernel, k.stride, k.padding));
    ASSERT_EQ(out.sizes(), ref.sizes());
    EXPECT_TRUE(at::equal(out, ref));
    const at::Tensor g = at::randn(ref.sizes());
    ref.backward(g);
    out.backward(g);
    // Random values have no ties: every gradient goes where libtorch sends it; overlapping
    // windows may add in another order.
    const double e_x = relative_error(x2.grad(), x1.grad());
    std::cout << "[ blocked max pool ] " << k.h << "x" << k.w << " " << k.kernel << "/" << k.stride
              << "/" << k.padding << ": grad input max diff / max |value| " << e_x << std::endl;
    EXPECT_LT(e_x, 1e-6);
  }
  // A NaN is its window's maximum, as in libtorch's max_pool2d (oneDNN's kernel skips it), and
  // the gradient still flows where libtorch sends it.
  at::Tensor with_nan = at::randn({1, 16, 6, 6});
  with_nan[0][3][2][2] = std::numeric_limits<float>::quiet_NaN();
  at::Tensor n1 = with_nan.clone().requires_grad_(true), n2 = with_nan.clone().requires_grad_(true);
  const at::Tensor expected = at::max_pool2d(n1, 3, 2, 1);
  const at::Tensor pooled = from_blocked(blocked_max_pool2d(to_blocked(n2), 3, 2, 1));
  EXPECT_TRUE(at::equal(pooled.isnan(), expected.isnan()));
  EXPECT_TRUE(pooled.isnan().any().item<bool>());
  EXPECT_TRUE(at::equal(pooled.nan_to_num(0), expected.nan_to_num(0)));
  expected.sum().backward();
  pooled.sum().backward();
  EXPECT_TRUE(at::equal(n2.grad(), n1.grad()));
  const at::Tensor map = to_blocked(at::zeros({1, 16, 4, 4}));
  EXPECT_THROW(blocked_max_pool2d(map, 3, 2, 2), c10::Error);  // padding over half the window
  EXPECT_THROW(blocked_max_pool2d(map, 7, 1, 0), c10::Error);  // window larger than the map
  EXPECT_THROW(blocked_max_pool2d(at::zeros({1, 16, 4, 4}), 3, 2, 1), c10::Error);  // NCHW
}

TEST(BlockedMaps, UpsamplingIsUpsampleNearest2dExactlyBothWays) {
  SKIP_WITHOUT_KERNELS();
  torch::manual_seed(4);
  at::Tensor x = at::randn({2, 32, 5, 7}), g = at::randn({2, 32, 10, 14});
  at::Tensor x1 = x.clone().requires_grad_(true), x2 = x.clone().requires_grad_(true);
  at::Tensor ref = at::upsample_nearest2d(x1, {10, 14});
  at::Tensor out = from_blocked(blocked_upsample_nearest2x(to_blocked(x2)));
  EXPECT_TRUE(at::equal(out, ref));
  ref.backward(g);
  out.backward(g);
  // each input pixel's gradient: the sum of its 2 x 2 square's, added in the same order or not
  EXPECT_TRUE(at::allclose(x2.grad(), x1.grad(), 1e-6, 1e-6));
}

TEST(BlockedMaps, ChannelAffineIsLibtorchsMulAddAndReluBitForBitBothWays) {
  SKIP_WITHOUT_KERNELS();
  torch::manual_seed(3);
  // 33 x 35 pixels: more than one task's worth, and not a multiple of the vector width
  const at::Tensor x = at::randn({2, 32, 33, 35}), scale = at::randn({32}), shift = at::randn({32});
  const std::vector<int64_t> per_channel = {1, 32, 1, 1};
  for (const bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "with ReLU" : "affine alone");
    at::Tensor x1 = x.clone().requires_grad_(true), x2 = x.clone().requires_grad_(true);
    at::Tensor ref = x1 * scale.reshape(per_channel) + shift.reshape(per_channel);
    if (relu) ref = at::relu(ref);
    const at::Tensor out = from_blocked(blocked_channel_affine(to_blocked(x2), scale, shift, relu));
    EXPECT_TRUE(at::equal(out, ref));
    const at::Tensor g = at::randn(ref.sizes());
    ref.backward(g);
    out.backward(g);
    EXPECT_TRUE(at::equal(x2.grad(), x1.grad()));
  }
  // NaN stays NaN through the ReLU, as at::relu leaves it
  const at::Tensor nan = at::full({1, 16, 1, 1}, std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(
      from_blocked(blocked_channel_affine(to_blocked(nan), at::ones({16}), at::zeros({16}), true))
          .isnan()
          .all()
          .item<bool>());
  // A trainable scale and shift (an eval-mode BatchNorm's) get their gradients too.
  at::Tensor s1 = scale.clone().requires_grad_(true), t1 = shift.clone().requires_grad_(true);
  at::Tensor s2 = scale.clone().requires_grad_(true), t2 = shift.clone().requires_grad_(true);
  at::relu(x * s1.reshape(per_channel) + t1.reshape(per_channel)).sum().backward();
  from_blocked(blocked_channel_affine(to_blocked(x), s2, t2, true)).sum().backward();
  EXPECT_TRUE(at::allclose(s2.grad(), s1.grad(), 1e-5, 1e-4));
  EXPECT_TRUE(at::allclose(t2.grad(), t1.grad(), 1e-5, 1e-4));
  EXPECT_THROW(blocked_channel_affine(to_blocked(x), at::ones({16}), at::zeros({32}), true),
               c10::Error);  // a scale for 16 channels of 32
}

// GroupNorm against at::group_norm in float64 on the same NCHW values, beside libtorch's own
// float32 at::group_norm: groups within a 16-channel block, of one channel, and across two
// blocks; with and without the affine map; every gradient. Images with a large mean (where float
// sums lose the variance) and maps too big for one task. The fused ReLU against the op without it
// and at::relu, bit for bit: against a reference it would flip the kinks that rounding moves.
TEST(BlockedMaps, GroupNormAgreesWithLibtorchBothWays) {
  SKIP_WITHOUT_KERNELS();
  torch::manual_seed(4);
  struct Case {
    int64_t channels, groups;
    bool affine;
  };
  for (const Case k : {Case{64, 32, true}, Case{32, 32, true}, Case{32, 1, true},
                       Case{48, 4, false}}) {
    SCOPED_TRACE(std::to_string(k.channels) + " channels in " + std::to_string(k.groups) +
                 " groups" + (k.affine ? "" : ", no affine map"));
    const at::Tensor x = at::randn({3, k.channels, 70, 61}) * 2 + 100;  // 4270 pixels per map
    const at::Tensor g = at::randn(x.sizes());
    const at::Tensor w = at::rand({k.channels}) + 0.5, b = at::randn({k.channels});
    // {output, grad input, grad weight, grad bias} of at::group_norm in x's dtype, or of ours
    auto run = [&](at::ScalarType type, bool blocked, bool relu, const at::Tensor& grad) {
      at::Tensor xi = x.to(type).clone().requires_grad_(true);
      at::Tensor wi = w.to(type).clone().requires_grad_(true);
      at::Tensor bi = b.to(type).clone().requires_grad_(true);
      const at::Tensor wk = k.affine ? wi : at::Tensor(), bk = k.affine ? bi : at::Tensor();
      const at::Tensor out =
          blocked ? from_blocked(blocked_group_norm(to_blocked(xi), k.groups, wk, bk, 1e-5, relu))
                  : at::group_norm(xi, k.groups, wk, bk, 1e-5);
      out.backward(grad.to(type));
      return std::vector<at::Tensor>{out.detach(), xi.grad(), wi.grad(), bi.grad()};
    };
    const auto exact = run(at::kDouble, false, false, g);
    const auto libtorch = run(at::kFloat, false, false, g);
    const auto ours = run(at::kFloat, true, false, g);
    const char* names[] = {"output", "grad input", "grad weight", "grad bias"};
    for (size_t i = 0; i < (k.affine ? 4 : 2); ++i) {
      const double e = relative_error(ours[i], exact[i]);
      const double e_libtorch = relative_error(libtorch[i], exact[i]);
      std::cout << "[ blocked group norm ] " << k.channels << "/" << k.groups << " " << names[i]
                << ": max diff / max |value| from float64 " << e << " (libtorch's float32 "
                << e_libtorch << ")" << std::endl;
      EXPECT_LT(e, std::max(1e-5, e_libtorch)) << names[i];
    }
    if (!k.affine) EXPECT_FALSE(ours[2].defined());
    const at::Tensor relu_mask = ours[0] > 0;
    const auto fused = run(at::kFloat, true, true, g);
    const auto masked = run(at::kFloat, true, false, g * relu_mask);
    EXPECT_TRUE(at::equal(fused[0], at::relu(ours[0])));
    for (size_t i = 1; i < (k.affine ? 4 : 2); ++i)
      EXPECT_TRUE(at::equal(fused[i], masked[i])) << names[i] << " with the ReLU";
  }
  // A NaN makes its group NaN, through the ReLU too, as libtorch's does.
  at::Tensor with_nan = at::randn({2, 32, 5, 6});
  with_nan[1][5][2][3] = std::numeric_limits<float>::quiet_NaN();
  const at::Tensor ref = at::relu(at::group_norm(with_nan, 8, {}, {}, 1e-5));
  const at::Tensor out =
      from_blocked(blocked_group_norm(to_blocked(with_nan), 8, {}, {}, 1e-5, true));
  EXPECT_TRUE(at::equal(out.isnan(), ref.isnan()));
  EXPECT_EQ(out.isnan().sum().item<int64_t>(), 4 * 30);  // image 1's channels 4-7
  // What it cannot compute is a named error.
  const at::Tensor blocked = to_blocked(at::randn({1, 32, 4, 4}));
  EXPECT_NE(detkit::testing::c10_error_of([&] {
              blocked_group_norm(blocked, 3, {}, {}, 1e-5);
            }).find("32 channels do not split into 3 groups"),
            std::string::npos);
  EXPECT_NE(detkit::testing::c10_error_of([&] {
              blocked_group_norm(blocked, 8, at::ones({32}), {}, 1e-5);
            }).find("a weight without a bias"),
            std::string::npos);
  EXPECT_NE(detkit::testing::c10_error_of([&] {
              blocked_group_norm(blocked, 8, at::ones({16}), at::zeros({16}), 1e-5);
            }).find("the weight must hold 32 float32 values"),
            std::string::npos);
  EXPECT_NE(detkit::testing::c10_error_of([&] {
              blocked_group_norm(at::zeros({1, 2, 0, 4, 16}), 8, {}, {}, 1e-5);
            }).find("a map without pixels"),
            std::string::npos);
}

}  // namespace
}  // namespace detkit::ops
