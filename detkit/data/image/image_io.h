#pragma once
// Reading images as Detectron2's read_image does: EXIF orientation applied, three channels in
// INPUT.FORMAT order. A file PIL would refuse (missing, not an image, a JPEG or PNG that ends
// early) is an error naming the file; OpenCV alone would decode a truncated JPEG with grey
// rows and only a warning.
#include <cstdint>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

namespace detkit::data {

/// Most pixels an image file may declare: PIL's decompression-bomb threshold
/// (Image.MAX_IMAGE_PIXELS), as the COCO loader's limit on declared sizes.
inline constexpr int64_t kMaxImagePixels = 89478485;

/// The image at `path` as an (H, W, 3) uint8 matrix in `format` order ("BGR" or "RGB"). A file
/// whose header declares more than kMaxImagePixels is refused before decoding (the formats
/// encoded_image_size reads: every format Debian's OpenCV 4.6 decodes but DICOM, which is
/// limited by OpenCV's own threshold, 2^30 pixels).
/// Whatever cannot be read or decoded (OpenCV's exceptions included) is a detkit::Error naming
/// the file. JPEG (TurboJPEG) and PNG (libpng) are decoded by detkit, other formats by OpenCV's
/// imgcodecs, loaded when first needed (opencv_codecs.h); the pixels are imdecode's either way.
cv::Mat read_image(const std::string& path, const std::string& format);

/// The encoded image as cv::imdecode(bytes, IMREAD_UNCHANGED) gives it (channels and depth as
/// stored, no EXIF rotation): PNG by libpng, other formats by OpenCV's imgcodecs. Undecodable
/// data is a detkit::Error "<what>: not a readable <kind> (...)".
cv::Mat decode_image_unchanged(const std::vector<unsigned char>& bytes, const std::string& what,
                               const std::string& kind);

/// The bytes of the image file at `path`, refused (a detkit::Error naming the file) when the file
/// is missing, unreadable, empty, truncated (JPEG, PNG), declares more than kMaxImagePixels, or is
/// DICOM: the checks every image decode here starts with.
std::vector<unsigned char> read_checked_image_bytes(const std::string& path);

/// Width and height an image header declares, read without decoding as OpenCV reads it: JPEG,
/// PNG, BMP, Netpbm (PBM, PGM, PPM, PAM, PFM), WebP, TIFF / BigTIFF, Sun raster, Radiance HDR,
/// JPEG 2000 and OpenEXR (image_header_size.cpp); false for other formats and unreadable headers.
bool encoded_image_size(const std::vector<unsigned char>& bytes, int64_t& width, int64_t& height);

/// Why the encoded bytes are incomplete ("JPEG data ends before its end-of-image marker"), or
/// empty when they are complete or of a format not checked here.
std::string truncation_problem(const std::vector<unsigned char>& bytes);

}  // namespace detkit::data
