#pragma once
// Reading semantic label maps (sem_seg_file_name) as Detectron2's read_image(path, "L") does:
// one 8-bit channel, the label of each pixel.
#include <opencv2/core.hpp>
#include <string>

namespace detkit::data {

/// The label map at `path` as an (H, W) uint8 matrix. A one-channel 8-bit image is taken as it
/// is; a colour or palette one is converted as PIL's convert("L") does (L = (19595 R + 38470 G +
/// 7471 B + 32768) >> 16, alpha ignored), which leaves a grey pixel's value unchanged. Whatever
/// cannot be read, and images of 16 bits or more per channel (PIL would clip their labels to 255
/// without a word), are a detkit::Error naming the file.
cv::Mat read_label_map(const std::string& path);

}  // namespace detkit::data
