// Schema of detkit::box_iou; the C++ API calls it through the dispatcher.
#include "detkit/ops/box_iou.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace detkit::ops {

at::Tensor box_iou(const at::Tensor& a, const at::Tensor& b) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("detkit::box_iou", "")
                             .typed<decltype(box_iou)>();
  return op.call(a, b);
}

TORCH_LIBRARY_FRAGMENT(detkit, m) { m.def("box_iou(Tensor a, Tensor b) -> Tensor"); }

}  // namespace detkit::ops
