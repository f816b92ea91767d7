// Schema of detkit::batched_nms; the C++ API calls it through the dispatcher.
#include "detkit/ops/batched_nms.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace detkit::ops {

at::Tensor batched_nms(const at::Tensor& boxes, const at::Tensor& scores, const at::Tensor& idxs,
                       double iou_threshold) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("detkit::batched_nms", "")
                             .typed<decltype(batched_nms)>();
  return op.call(boxes, scores, idxs, iou_threshold);
}

TORCH_LIBRARY_FRAGMENT(detkit, m) {
  m.def("batched_nms(Tensor boxes, Tensor scores, Tensor idxs, float iou_threshold) -> Tensor");
}

}  // namespace detkit::ops
