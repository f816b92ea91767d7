#pragma once
// A bool tensor from 0/1 literals (libtorch 1.13's at::tensor has no bool overload).
#include <ATen/ATen.h>

#include <initializer_list>
#include <vector>

namespace detkit::testing {

inline at::Tensor bools(std::initializer_list<int> values) {
  std::vector<int64_t> v(values.begin(), values.end());
  return at::tensor(v, at::kLong).to(at::kBool);
}

}  // namespace detkit::testing
