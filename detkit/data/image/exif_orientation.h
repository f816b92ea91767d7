#pragma once
// EXIF orientation (tag 0x0112) applied to decoded pixels, as OpenCV's imdecode and PIL's
// ImageOps.exif_transpose (Detectron2's read_image) apply it.
#include <cstddef>
#include <opencv2/core.hpp>

namespace detkit::data {

/// The orientation (1..8) an EXIF TIFF block (the "Exif\0\0" APP1 payload of a JPEG after that
/// prefix, a PNG's eXIf chunk) gives in its first IFD: 1 without the tag, 0 when the block is
/// malformed or the value is outside 1..8.
int exif_orientation_of_tiff(const unsigned char* block, size_t size);

/// `image` turned upright for EXIF orientation 1..8: 2 mirrored left-right, 3 turned 180 degrees,
/// 4 mirrored top-bottom, 5 transposed, 6 turned 90 degrees clockwise, 7 transposed across the
/// other diagonal, 8 turned 90 degrees anticlockwise; 1 (and any other value) unchanged.
cv::Mat apply_exif_orientation(const cv::Mat& image, int orientation);

}  // namespace detkit::data
