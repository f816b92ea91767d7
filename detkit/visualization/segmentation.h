#pragma once
// Drawing semantic and panoptic segmentations, as Detectron2's Visualizer.draw_sem_seg and
// draw_panoptic_seg do: each stuff region (a semantic class) filled in its class's colour with
// an off-white outline and its name at the median of its largest part; each thing filled in its
// own colour with its outline and "name 87%" at the median of its pixels (beside it when small),
// without a box. Labels are drawn last, in a lightened colour on a dark background, so no fill
// hides them. Void pixels (id 0, or a class without a name) are left as they are.
//
//   cv::Mat canvas = draw_panoptic_seg(bgr, outputs.panoptic_seg.value(), things, stuff);
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "detkit/structures/model_io.h"
#include "detkit/visualization/visualizer.h"

namespace detkit::visualization {

/// Detectron2's fill opacities: draw_panoptic_seg's 0.7 and draw_sem_seg's 0.8.
constexpr double kPanopticAlpha = 0.7;
constexpr double kSemSegAlpha = 0.8;

/// The colour (BGR) of semantic class k: entry k (cycled) of Detectron2's colormap, the list its
/// random_color draws from where the metadata gives no stuff_colors; fixed per class, so a class
/// keeps its colour from image to image.
cv::Scalar class_color(int64_t k);

/// "name" from `stuff_classes`, or "stuff N" when the index is outside it.
std::string stuff_label(int64_t class_index, const std::vector<std::string>& stuff_classes);

/// The pixel count of each value of an integer tensor, values in increasing order.
std::map<int64_t, int64_t> value_areas(const at::Tensor& values);

/// Detectron2's draw_sem_seg: `labels` (H, W) integer, a class per pixel of `bgr` (CV_8UC3,
/// same size). Classes are drawn largest first; with `stuff_classes` given, only the classes it
/// names (Detectron2 skips the others), all of them ("stuff N") otherwise.
cv::Mat draw_sem_seg(const cv::Mat& bgr, const at::Tensor& labels,
                     const std::vector<std::string>& stuff_classes,
                     const VisualizerOptions& options = {});

/// Detectron2's draw_panoptic_seg: stuff segments (largest first, coloured by category), then
/// thing segments (largest first, coloured per instance, labelled with their score); ids of the
/// map without a segment are void. `panoptic.ids` must be `bgr`'s size.
cv::Mat draw_panoptic_seg(const cv::Mat& bgr, const structures::PanopticOutput& panoptic,
                          const std::vector<std::string>& thing_classes,
                          const std::vector<std::string>& stuff_classes,
                          const VisualizerOptions& options = {});

}  // namespace detkit::visualization
