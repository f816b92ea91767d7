// Schema of detkit::paste_masks_in_image; the C++ API calls it through the dispatcher.
#include "detkit/ops/paste_masks.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace detkit::ops {

at::Tensor paste_masks_in_image(const at::Tensor& masks, const at::Tensor& boxes,
                                int64_t image_height, int64_t image_width, double threshold) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("detkit::paste_masks_in_image", "")
                             .typed<decltype(paste_masks_in_image)>();
  return op.call(masks, boxes, image_height, image_width, threshold);
}

TORCH_LIBRARY_FRAGMENT(detkit, m) {
  m.def(
      "paste_masks_in_image(Tensor masks, Tensor boxes, int image_height, int image_width, "
      "float threshold=0.5) -> Tensor");
}

}  // namespace detkit::ops
