// conv_algorithms: the convolution kernels CONV_ALGORITHM auto runs against libtorch's own (what
// PyTorch and torchvision run), side by side in one process: forward, and forward + backward
// (input, weight and bias gradients), median of --repeats alternating runs each, and the ratio.
// - detkit's Winograd convolution (ops/winograd_conv2d.h) against at::conv2d (libtorch's direct
//   oneDNN kernels) on the 3x3 stride-1 shapes of the detectors' heads and backbones;
// - oneDNN's deconvolution (ops/onednn_conv_transpose2d.h) against at::conv_transpose2d
//   (libtorch's im2col + GEMM) on the mask and keypoint heads' upsampling: detkit keeps
//   libtorch's forward pass there (oneDNN's ran 0.87-1.19x of it), so only the f+b columns
//   differ; and, where the stride is the kernel (the mask head's), the matrix products of
//   ops/patchwise_conv_transpose2d.h, forward and backward.
//
//   conv_algorithms [--threads 2] [--repeats 7]
//
// Prints one row per shape; no threshold, nothing asserted. Rows whose kernels this CPU lacks
// (Winograd needs AVX-512) are left out, and the output says so.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/autograd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "detkit/ops/onednn_conv_transpose2d.h"
#include "detkit/ops/patchwise_conv_transpose2d.h"
#include "detkit/ops/winograd_conv2d.h"
#include "detkit/utils/allocator.h"
#include "detkit/utils/threads.h"

namespace {

struct Shape {
  std::string what;
  int64_t n, c, o, h, w;
};

struct TransposedShape {
  std::string what;
  int64_t n, c, o, h, w, kernel, stride, padding;
};

using Conv = std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>;

double seconds(const std::function<void()>& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// One row: `libtorch` against `detkit` on (x, w, b).
void compare(const std::string& label, const at::Tensor& x, const at::Tensor& w,
             const at::Tensor& b, const Conv& libtorch, const Conv& detkit, int repeats) {
  auto forward = [&](const Conv& conv) {
    at::NoGradGuard no_grad;
    return seconds([&] { conv(x, w, b); });
  };
  auto train = [&](const Conv& conv) {
    at::Tensor xi = x.detach().requires_grad_(true), wi = w.detach().requires_grad_(true);
    at::Tensor bi = b.detach().requires_grad_(true);
    return seconds([&] { conv(xi, wi, bi).sum().backward(); });
  };
  forward(libtorch), forward(detkit), train(libtorch), train(detkit);  // first calls: setup
  std::vector<double> fl, fd, tl, td;
  for (int r = 0; r < repeats; ++r) {  // alternating which side goes first
    if (r % 2 == 0) fl.push_back(forward(libtorch));
    fd.push_back(forward(detkit));
    if (r % 2 == 1) fl.push_back(forward(libtorch));
    if (r % 2 == 0) tl.push_back(train(libtorch));
    td.push_back(train(detkit));
    if (r % 2 == 1) tl.push_back(train(libtorch));
  }
  fmt::print("{:<62} {:10.2f} {:9.2f} {:6.2f}   {:10.2f} {:9.2f} {:6.2f}\n", label,
             median(fl) * 1e3, median(fd) * 1e3, median(fl) / median(fd), median(tl) * 1e3,
             median(td) * 1e3, median(tl) / median(td));
}

void print_header(const std::string& what, const std::string& libtorch, const std::string& detkit) {
  fmt::print("{:<62} {:>10} {:>9} {:>6}   {:>10} {:>9} {:>6}\n", what, "fwd " + libtorch, detkit,
             "ratio", "f+b " + libtorch, detkit, "ratio");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the convolution kernels CONV_ALGORITHM auto runs vs libtorch's, side by side"};
  int threads = 2, repeats = 7;
  app.add_option("--threads", threads, "libtorch threads");
  app.add_option("--repeats", repeats, "timed runs of each side per shape (median shown)");
  CLI11_PARSE(app, argc, argv);
  detkit::configure_allocator();  // as the CLI: large blocks' pages reused, not faulted in anew
  detkit::configure_threads(threads);
  // 512x384 inputs (compare_torchvision's), batch 2, unless said; ROI heads with 100 ROIs.
  const std::vector<Shape> shapes = {
      {"ResNet-50 res2 3x3 (96x128)", 2, 64, 64, 96, 128},
      {"ResNet-50 res3 3x3 (48x64)", 2, 128, 128, 48, 64},
      {"ResNet-50 res4 3x3 (24x32)", 2, 256, 256, 24, 32},
      {"ResNet-50 res5 3x3 (12x16)", 2, 512, 512, 12, 16},
      {"FPN output / RPN / RetinaNet P3 (48x64)", 2, 256, 256, 48, 64},
      {"RetinaNet P4 (24x32)", 2, 256, 256, 24, 32},
      {"RetinaNet cls_score P3 (27 outputs)", 2, 256, 27, 48, 64},
      {"mask head, 100 ROIs (14x14)", 100, 256, 256, 14, 14},
      {"keypoint head, 100 ROIs (14x14, 512)", 100, 512, 512, 14, 14},
      {"demo mask head, 32 ROIs (14x14, 128)", 32, 128, 128, 14, 14},
  };
  // The mask head's 2x2 stride-2 upsampling (R50: 256 channels, 100 ROIs in inference, up to 128
  // foreground ROIs per batch of 2 in training; the demo: 128 channels), the keypoint head's 4x4
  // stride-2 one to 17 keypoints.
  const std::vector<TransposedShape> transposed = {
      {"mask head deconv, 100 ROIs", 100, 256, 256, 14, 14, 2, 2, 0},
      {"mask head deconv, 32 ROIs", 32, 256, 256, 14, 14, 2, 2, 0},
      {"demo mask head deconv, 96 ROIs (128)", 96, 128, 128, 14, 14, 2, 2, 0},
      {"demo mask head deconv, 128 ROIs (128)", 128, 128, 128, 14, 14, 2, 2, 0},
      {"keypoint head deconv, 100 ROIs (17 keypoints)", 100, 512, 17, 14, 14, 4, 2, 1},
      {"keypoint head deconv, 32 ROIs (17 keypoints)", 32, 512, 17, 14, 14, 4, 2, 1},
  };
  fmt::print("{} threads, median of {} alternating runs, milliseconds\n", threads, repeats);
  if (detkit::ops::winograd_conv2d_available()) {
    print_header("3x3 stride 1 (N, C -> O)", "direct", "winograd");
    for (const Shape& s : shapes) {
      at::Tensor x = at::randn({s.n, s.c, s.h, s.w}).relu_();
      at::Tensor w = at::randn({s.o, s.c, 3, 3}) * 0.02, b = at::zeros({s.o});
      if (!detkit::ops::winograd_conv2d_applies(x, w, b, 1, 1, 1, 1)) continue;
      compare(
          fmt::format("{} ({}, {} -> {})", s.what, s.n, s.c, s.o), x, w, b,
          [](auto& xi, auto& wi, auto& bi) { return at::conv2d(xi, wi, bi, 1, 1); },
          [](auto& xi, auto& wi, auto& bi) { return detkit::ops::winograd_conv2d(xi, wi, bi); },
          repeats);
    }
  } else {
    fmt::print("oneDNN has no Winograd kernels on this CPU (they need AVX-512): no 3x3 rows\n");
  }
  print_header("transposed (N, C -> O, k, stride, padding)", "libtorch", "detkit");
  for (const TransposedShape& s : transposed) {
    at::Tensor x = at::randn({s.n, s.c, s.h, s.w}).relu_();
    at::Tensor w = at::randn({s.c, s.o, s.kernel, s.kernel}) * 0.02, b = at::zeros({s.o});
    const std::string label = fmt::format("{} ({}, {} -> {}, {}, {}, {})", s.what, s.n, s.c, s.o,
                                          s.kernel, s.stride, s.padding);
    auto libtorch = [&](auto& xi, auto& wi, auto& bi) {
      return at::conv_transpose2d(xi, wi, bi, s.stride, s.padding);
    };
    // Where the stride is the kernel, both of detkit's: oneDNN's backward (what CONV_ALGORITHM
    // auto ran before) and the matrix products (what it runs).
    if (detkit::ops::onednn_conv_transpose2d_applies(x, w, b, {s.stride, s.stride},
                                                     {s.padding, s.padding}, {0, 0}, {1, 1}, 1))
      compare(
          label + " oneDNN", x, w, b, libtorch,
          [&](auto& xi, auto& wi, auto& bi) {
            return detkit::ops::onednn_conv_transpose2d(xi, wi, bi, s.stride, s.padding);
          },
          repeats);
    else
      fmt::print("{:<62} oneDNN has no JIT kernel for it on this CPU\n", label);
    if (detkit::ops::patchwise_conv_transpose2d_applies(x, w, b, {s.stride, s.stride},
                                                        {s.padding, s.padding}, {0, 0}, {1, 1}, 1))
      compare(
          label + " matmul", x, w, b, libtorch,
          [](auto& xi, auto& wi, auto& bi) {
            return detkit::ops::patchwise_conv_transpose2d(xi, wi, bi);
          },
          repeats);
  }
  return 0;
}
