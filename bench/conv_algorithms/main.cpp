// conv_algorithms: detkit's Winograd convolution (ops/winograd_conv2d.h, what CONV_ALGORITHM auto
// runs) against at::conv2d (libtorch's direct oneDNN kernels, what PyTorch and torchvision run) on
// the 3x3 stride-1 shapes of the detectors' heads and backbones, side by side in one process:
// forward, and forward + backward (input, weight and bias gradients), median of --repeats
// alternating runs each, and the ratio.
//
//   conv_algorithms [--threads 2] [--repeats 7]
//
// Prints one row per shape; no threshold, nothing asserted. Needs an AVX-512 CPU (oneDNN has no
// Winograd kernels elsewhere): says so and exits 0 without one.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/autograd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "detkit/ops/winograd_conv2d.h"
#include "detkit/utils/threads.h"

namespace {

struct Shape {
  std::string what;
  int64_t n, c, o, h, w;
};

double seconds(const std::function<void()>& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"detkit's Winograd 3x3 convolution vs at::conv2d, side by side"};
  int threads = 2, repeats = 7;
  app.add_option("--threads", threads, "libtorch threads");
  app.add_option("--repeats", repeats, "timed runs of each side per shape (median shown)");
  CLI11_PARSE(app, argc, argv);
  detkit::configure_threads(threads);
  if (!detkit::ops::winograd_conv2d_available()) {
    fmt::print("oneDNN has no Winograd kernels on this CPU (they need AVX-512): nothing to compare\n");
    return 0;
  }
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
  fmt::print("{} threads, median of {} alternating runs, milliseconds\n", threads, repeats);
  fmt::print("{:<58} {:>10} {:>9} {:>6}   {:>10} {:>9} {:>6}\n", "shape (N, C -> O, HxW)",
             "fwd direct", "winograd", "ratio", "f+b direct", "winograd", "ratio");
  for (const Shape& s : shapes) {
    at::Tensor x = at::randn({s.n, s.c, s.h, s.w}).relu_();
    at::Tensor w = at::randn({s.o, s.c, 3, 3}) * 0.02, b = at::zeros({s.o});
    if (!detkit::ops::winograd_conv2d_applies(x, w, b, 1, 1, 1, 1)) continue;
    auto direct = [&](const at::Tensor& xi, const at::Tensor& wi, const at::Tensor& bi) {
      return at::conv2d(xi, wi, bi, 1, 1);
    };
    auto winograd = [&](const at::Tensor& xi, const at::Tensor& wi, const at::Tensor& bi) {
      return detkit::ops::winograd_conv2d(xi, wi, bi);
    };
    using Conv = std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>;
    auto forward = [&](const Conv& conv) {
      at::NoGradGuard no_grad;
      return seconds([&] { conv(x, w, b); });
    };
    auto train = [&](const Conv& conv) {
      at::Tensor xi = x.detach().requires_grad_(true), wi = w.detach().requires_grad_(true);
      at::Tensor bi = b.detach().requires_grad_(true);
      return seconds([&] { conv(xi, wi, bi).sum().backward(); });
    };
    forward(direct), forward(winograd), train(direct), train(winograd);  // first calls: setup
    std::vector<double> fd, fw, td, tw;
    for (int r = 0; r < repeats; ++r) {  // alternating which side goes first
      if (r % 2 == 0) fd.push_back(forward(direct));
      fw.push_back(forward(winograd));
      if (r % 2 == 1) fd.push_back(forward(direct));
      if (r % 2 == 0) td.push_back(train(direct));
      tw.push_back(train(winograd));
      if (r % 2 == 1) td.push_back(train(direct));
    }
    const std::string label = fmt::format("{} ({}, {} -> {})", s.what, s.n, s.c, s.o);
    fmt::print("{:<58} {:10.2f} {:9.2f} {:6.2f}   {:10.2f} {:9.2f} {:6.2f}\n", label,
               median(fd) * 1e3, median(fw) * 1e3, median(fd) / median(fw), median(td) * 1e3,
               median(tw) * 1e3, median(td) / median(tw));
  }
  return 0;
}
