#pragma once
// Writing images in the format a file name's extension names, as cv::imencode / cv::imwrite:
// PNG with libpng, JPEG with TurboJPEG (quality 95), any other extension through OpenCV's
// imgcodecs loaded at run time (opencv_codecs.h).
#include <opencv2/core.hpp>
#include <string>
#include <vector>

namespace detkit::data {

/// `image` encoded as the format `extension` names (".png", ".jpg", ".jpeg", ".webp", ...; case
/// ignored). A detkit::Error naming `what` when it cannot be encoded.
std::vector<unsigned char> encode_image(const std::string& extension, const cv::Mat& image,
                                        const std::string& what);

/// `image` written to `path` in the format its extension names, whole or not at all
/// (atomic_write). A detkit::Error naming `path` when it cannot be encoded or written.
void write_image(const std::string& path, const cv::Mat& image);

}  // namespace detkit::data
