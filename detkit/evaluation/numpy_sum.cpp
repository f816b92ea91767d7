#include "detkit/evaluation/numpy_sum.h"

#include <algorithm>
#include <limits>

namespace detkit::evaluation {

double numpy_pairwise_sum(const double* a, size_t n) {
  if (n < 8) {
    double sum = 0.;
    for (size_t i = 0; i < n; ++i) sum += a[i];
    return sum;
  }
  if (n <= 128) {
    double r[8];
    for (size_t j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - n % 8; i += 8)
      for (size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  size_t half = n / 2;
  half -= half % 8;
  return numpy_pairwise_sum(a, half) + numpy_pairwise_sum(a + half, n - half);
}

double numpy_sum(const std::vector<double>& values) {
  constexpr size_t kBuffer = 8192;
  double sum = 0.;
  for (size_t begin = 0; begin < values.size(); begin += kBuffer)
    sum += numpy_pairwise_sum(values.data() + begin, std::min(kBuffer, values.size() - begin));
  return sum;
}

double numpy_mean(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  return numpy_sum(values) / static_cast<double>(values.size());
}

}  // namespace detkit::evaluation
