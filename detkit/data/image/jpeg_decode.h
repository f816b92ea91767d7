#pragma once
// Decoding JPEGs straight into the channel order the model wants, with libjpeg-turbo's TurboJPEG
// API. OpenCV 4.6 decodes to RGB and then swaps channels in a scalar loop that took a quarter of
// the loader's time; TurboJPEG converts colour with SIMD in the decoder. Both run libjpeg-turbo's
// default (accurate integer DCT, fancy upsampling), so the pixels are the same.
#include <cstdint>
#include <opencv2/core.hpp>
#include <vector>

namespace detkit::data {

/// The EXIF orientation (1..8) of a JPEG: 1 when it has no EXIF orientation tag, 0 when its
/// EXIF block cannot be read (let a full decoder decide).
int jpeg_exif_orientation(const std::vector<unsigned char>& bytes);

/// Width and height from the JPEG's frame header, without decoding (TurboJPEG's header reader,
/// else the first SOFn segment as libjpeg finds it); false when it has none.
bool jpeg_header_size(const std::vector<unsigned char>& bytes, int64_t& width, int64_t& height);

/// The JPEG as an (H, W, 3) uint8 matrix in BGR order (RGB with `rgb`), EXIF orientation NOT
/// applied; an empty matrix when TurboJPEG cannot produce it (CMYK, corrupt data...).
cv::Mat decode_jpeg(const std::vector<unsigned char>& bytes, bool rgb);

}  // namespace detkit::data
