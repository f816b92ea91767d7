#pragma once
// Tensor comparisons the op and modeling tests share.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace detkit::testing {

/// Largest |a - b|, in double, on the CPU (either may be on a GPU); 0 for two empty tensors.
/// Tensors of different shapes fail the calling test and differ by infinity.
inline double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  if (a.sizes() != b.sizes()) return std::numeric_limits<double>::infinity();
  if (a.numel() == 0) return 0.0;
  return (a.cpu().to(at::kDouble) - b.cpu().to(at::kDouble)).abs().max().item<double>();
}

/// max |a - ref| / max |ref|, in double, on the CPU.
inline double relative_error(const at::Tensor& a, const at::Tensor& ref) {
  const at::Tensor want = ref.cpu().to(at::kDouble);
  return ((a.cpu().to(at::kDouble) - want).abs().max() / want.abs().max()).item<double>();
}

/// The values of an integer tensor (indices, labels), as int64.
inline std::vector<int64_t> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.cpu().to(at::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

}  // namespace detkit::testing
