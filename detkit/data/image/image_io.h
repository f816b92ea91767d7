#pragma once
// Reading images as Detectron2's read_image does: EXIF orientation applied, three channels in
// INPUT.FORMAT order. A file PIL would refuse (missing, not an image, a JPEG or PNG that ends
// early) is an error naming the file; OpenCV alone would decode a truncated JPEG with grey
// rows and only a warning.
#include <opencv2/core.hpp>
#include <string>
#include <vector>

namespace detkit::data {

/// The image at `path` as an (H, W, 3) uint8 matrix in `format` order ("BGR" or "RGB").
cv::Mat read_image(const std::string& path, const std::string& format);

/// Why the encoded bytes are incomplete ("JPEG data ends before its end-of-image marker"), or
/// empty when they are complete or of a format not checked here.
std::string truncation_problem(const std::vector<unsigned char>& bytes);

}  // namespace detkit::data
