#pragma once
// Pasting of per-box mask predictions into full images, with the semantics of Detectron2's
// detectron2.layers.mask_ops.paste_masks_in_image on CPU.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace detkit::ops {

/// Resamples each mask over its box and thresholds it into an image-sized binary mask.
/// Pixel (y, x) of image i is true when the mask value bilinearly sampled at the pixel centre,
/// mapped into box i (grid_sample, align_corners = false, zero outside the mask), is >= threshold.
/// Only pixels within one pixel of the box (rounded outwards) are sampled; the rest are false.
/// masks: (N, Hm, Wm) probabilities (Detectron2 uses square Hm = Wm = 28); other dtypes than
///   float and double are converted to float.
/// boxes: (N, 4) float or double, (x1, y1, x2, y2) in image pixels.
/// threshold: >= 0 (Detectron2's negative "soft mask" mode is not provided).
/// Returns (N, image_height, image_width) bool.
at::Tensor paste_masks_in_image(const at::Tensor& masks, const at::Tensor& boxes,
                                int64_t image_height, int64_t image_width, double threshold = 0.5);

}  // namespace detkit::ops
