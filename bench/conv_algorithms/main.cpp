// conv_algorithms: the convolution kernels CONV_ALGORITHM auto runs against libtorch's own (what
// PyTorch and torchvision run), side by side in one process: forward, and forward + backward
// (input, weight and bias gradients), median of --repeats alternating runs each, and the ratio.
// The one convolution auto gives to a kernel of detkit's: the mask head's upsampling, a transposed
// convolution whose stride is its kernel, as the matrix products of
// ops/patchwise_conv_transpose2d.h against at::conv_transpose2d. Every other convolution runs
// libtorch's kernels under either algorithm.
//
//   conv_algorithms [--threads 2] [--repeats 7]
//
// Prints one row per shape; no threshold, nothing asserted.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/autograd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "detkit/ops/patchwise_conv_transpose2d.h"
#include "detkit/utils/allocator.h"
#include "detkit/utils/threads.h"

namespace {

/// A transposed convolution whose stride is its kernel, without padding.
struct TransposedShape {
  std::string what;
  int64_t n, c, o, h, w, kernel;
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
  // The mask head's 2x2 stride-2 upsampling on 14x14 ROI maps (R50: 256 channels, 100 ROIs in
  // inference, up to 128 foreground ROIs per batch of 2 in training; the demo: 128 channels).
  const std::vector<TransposedShape> transposed = {
      {"mask head deconv, 100 ROIs", 100, 256, 256, 14, 14, 2},
      {"mask head deconv, 32 ROIs", 32, 256, 256, 14, 14, 2},
      {"demo mask head deconv, 96 ROIs (128)", 96, 128, 128, 14, 14, 2},
      {"demo mask head deconv, 128 ROIs (128)", 128, 128, 128, 14, 14, 2},
  };
  fmt::print("{} threads, median of {} alternating runs, milliseconds\n", threads, repeats);
  print_header("transposed (N, C -> O, k = stride)", "libtorch", "matmul");
  for (const TransposedShape& s : transposed) {
    at::Tensor x = at::randn({s.n, s.c, s.h, s.w}).relu_();
    at::Tensor w = at::randn({s.c, s.o, s.kernel, s.kernel}) * 0.02, b = at::zeros({s.o});
    compare(
        fmt::format("{} ({}, {} -> {}, {})", s.what, s.n, s.c, s.o, s.kernel), x, w, b,
        [&](auto& xi, auto& wi, auto& bi) { return at::conv_transpose2d(xi, wi, bi, s.kernel); },
        [](auto& xi, auto& wi, auto& bi) {
          return detkit::ops::patchwise_conv_transpose2d(xi, wi, bi);
        },
        repeats);
  }
  return 0;
}
