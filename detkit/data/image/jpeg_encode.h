#pragma once
// JPEG encoding with libjpeg-turbo's TurboJPEG API, with the settings OpenCV's imencode(".jpg")
// uses by default (baseline, the accurate integer DCT, 4:2:0 chroma subsampling for colour, the
// standard Huffman tables).
#include <opencv2/core.hpp>
#include <vector>

namespace detkit::data {

/// OpenCV's default JPEG quality (IMWRITE_JPEG_QUALITY).
inline constexpr int kDefaultJpegQuality = 95;

/// `image` (CV_8UC3 in B, G, R order, or CV_8UC1 grey) as a JPEG file's bytes at `quality`
/// (1..100). A detkit::Error for another type or quality, or when TurboJPEG fails.
std::vector<unsigned char> encode_jpeg(const cv::Mat& image, int quality = kDefaultJpegQuality);

}  // namespace detkit::data
