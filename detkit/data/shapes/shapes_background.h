#pragma once
// Cluttered backgrounds and colours for the synthetic shapes dataset.
#include <opencv2/core.hpp>

#include "detkit/data/shapes/shapes_random.h"

namespace detkit::data {

/// A random colour (B, G, R in 0..255): uniform hue, saturation in [min_saturation,
/// max_saturation], value (brightness) in [min_value, max_value].
cv::Vec3f random_color(ShapesRandom& random, double min_saturation, double max_saturation,
                       double min_value, double max_value);

/// A height x width CV_32FC3 (BGR, 0..255) background: a linear colour gradient, smooth
/// low-frequency colour variation over it, and a few faint lines and soft blobs that are clutter,
/// not objects.
cv::Mat render_background(ShapesRandom& random, int width, int height);

}  // namespace detkit::data
