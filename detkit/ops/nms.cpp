// Schema of detkit::nms; the C++ API calls it through the dispatcher.
#include "detkit/ops/nms.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace detkit::ops {

at::Tensor nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("detkit::nms", "").typed<decltype(nms)>();
  return op.call(boxes, scores, iou_threshold);
}

TORCH_LIBRARY_FRAGMENT(detkit, m) {
  m.def("nms(Tensor boxes, Tensor scores, float iou_threshold) -> Tensor");
}

}  // namespace detkit::ops
