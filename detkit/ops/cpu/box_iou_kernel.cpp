// CPU kernel of detkit::box_iou, parallel over rows of the (N, M) result. Same arithmetic as
// torchvision's tensor expression, element by element.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "detkit/ops/checks.h"

namespace detkit::ops {
namespace {

template <typename T>
void box_iou_impl(const at::Tensor& a, const at::Tensor& b, at::Tensor& iou) {
  const int64_t n = a.size(0), m = b.size(0);
  const T* pa = a.data_ptr<T>();
  const T* pb = b.data_ptr<T>();
  T* out = iou.data_ptr<T>();
  std::vector<T> area_b(m);
  for (int64_t j = 0; j < m; ++j) {
    area_b[j] = (pb[4 * j + 2] - pb[4 * j]) * (pb[4 * j + 3] - pb[4 * j + 1]);
  }
  const int64_t grain = std::max<int64_t>(1, 16384 / m);
  at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T* p = pa + 4 * i;
      const T area_a = (p[2] - p[0]) * (p[3] - p[1]);
      T* row = out + i * m;
      for (int64_t j = 0; j < m; ++j) {
        const T* q = pb + 4 * j;
        const T w = std::max(std::min(p[2], q[2]) - std::max(p[0], q[0]), T(0));
        const T h = std::max(std::min(p[3], q[3]) - std::max(p[1], q[1]), T(0));
        const T inter = w * h;
        row[j] = inter / (area_a + area_b[j] - inter);
      }
    }
  });
}

at::Tensor box_iou_kernel(const at::Tensor& a, const at::Tensor& b) {
  check_box_iou_arguments(a, b);
  at::Tensor iou = at::empty({a.size(0), b.size(0)}, a.options());
  if (iou.numel() == 0) return iou;
  const at::Tensor a_c = a.contiguous(), b_c = b.contiguous();
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "box_iou",
                             [&] { box_iou_impl<scalar_t>(a_c, b_c, iou); });
  return iou;
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, CPU, m) { m.impl("box_iou", TORCH_FN(box_iou_kernel)); }

}  // namespace detkit::ops
