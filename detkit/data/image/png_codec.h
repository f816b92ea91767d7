#pragma once
// PNG decoding and encoding with libpng, as OpenCV's imgcodecs does them (same channel and depth
// rules, so the pixels equal cv::imdecode's and cv::imencode's files decode to the same pixels),
// without loading imgcodecs and the formats it brings (GDAL, OpenEXR, TIFF, ...).
#include <opencv2/core.hpp>
#include <string>
#include <vector>

namespace detkit::data {

/// How the channels of a PNG come out, as OpenCV's imdecode flags.
enum class PngChannels {
  kUnchanged,  ///< IMREAD_UNCHANGED: grey 1 channel, RGB or palette 3 (B, G, R), with alpha or
               ///< a tRNS chunk 4 (B, G, R, A); 8 or 16 bits as stored (1, 2, 4 bits widened)
  kColor,      ///< IMREAD_COLOR: 3 channels, B, G, R, 8 bits (16-bit samples' high byte)
};

/// True when the bytes start with the PNG signature.
bool is_png(const std::vector<unsigned char>& bytes);

/// The PNG's pixels as OpenCV's cv::imdecode(bytes, IMREAD_UNCHANGED or IMREAD_COLOR) gives them;
/// an empty matrix and `error` set (libpng's message) when the data cannot be decoded.
/// `orientation` (when given) receives the EXIF orientation of an eXIf chunk before the image
/// data (1 without one, 0 when it is malformed), which imdecode applies for IMREAD_COLOR (and the
/// caller must: the pixels are as stored).
cv::Mat decode_png(const std::vector<unsigned char>& bytes, PngChannels channels,
                   std::string* error, int* orientation = nullptr);

/// `image` (CV_8U or CV_16U; 1 channel grey, 3 B, G, R or 4 B, G, R, A) as a PNG file's bytes,
/// with OpenCV's default settings (fastest zlib level, the Sub filter, run-length strategy).
/// A detkit::Error for another depth or channel count.
std::vector<unsigned char> encode_png(const cv::Mat& image);

}  // namespace detkit::data
