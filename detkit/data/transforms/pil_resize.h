#pragma once
// Bilinear resize of uint8 images exactly as PIL's Image.resize(size, Image.BILINEAR), which
// Detectron2's ResizeTransform uses: a triangle filter widened by the scale when shrinking (so
// downscaling averages, where OpenCV's INTER_LINEAR samples 4 pixels), 22-bit fixed-point
// weights, a horizontal pass into a rounded uint8 image, then a vertical pass. Bit-identical
// to Pillow 9.4 on coco_tiny (scales 0.5x-2.3x); docs/DATASETS.md has the measurements.
#include <opencv2/core.hpp>

namespace detkit::data {

/// `image`: (H, W) or (H, W, C) uint8 (CV_8UC1..CV_8UC4). Returns (new_h, new_w), same type.
cv::Mat pil_bilinear_resize(const cv::Mat& image, int new_h, int new_w);

/// Nearest-neighbour resize exactly as PIL's Image.resize(size, Image.NEAREST) (Detectron2's
/// apply_segmentation): output pixel x takes source int(s / 2 + x s), s = w / new_w, summed as
/// Pillow sums it (s / 2, then + s per pixel, in doubles). The rounding of that running sum picks
/// another source pixel than floor((x + 0.5) s) for about a third of the sizes (at 426 -> 320
/// rows among them), so OpenCV's INTER_NEAREST_EXACT does not match it. Any matrix type.
cv::Mat pil_nearest_resize(const cv::Mat& image, int new_h, int new_w);

}  // namespace detkit::data
