#include "detkit/data/image/label_map_io.h"

#include <vector>

#include "detkit/data/image/image_io.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

// PIL's RGB -> L (libImaging/Convert.c): ITU-R 601-2 luma in 16-bit fixed point, rounded.
cv::Mat pil_luma(const cv::Mat& bgr_or_bgra) {
  cv::Mat out(bgr_or_bgra.rows, bgr_or_bgra.cols, CV_8UC1);
  const int channels = bgr_or_bgra.channels();
  for (int y = 0; y < out.rows; ++y) {
    const uchar* in = bgr_or_bgra.ptr<uchar>(y);
    uchar* row = out.ptr<uchar>(y);
    for (int x = 0; x < out.cols; ++x, in += channels) {
      const uint32_t b = in[0], g = in[1], r = in[2];
      row[x] = static_cast<uchar>((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
    }
  }
  return out;
}

}  // namespace

cv::Mat read_label_map(const std::string& path) {
  const std::vector<unsigned char> bytes = read_checked_image_bytes(path);
  // UNCHANGED keeps one channel one channel (IMREAD_GRAYSCALE would also accept colour files
  // with OpenCV's own luma weights); palette PNGs come out as BGR.
  const cv::Mat image = decode_image_unchanged(bytes, path, "label map");
  if (image.depth() != CV_8U) {
    throw Error(path +
                ": a label map must have 8 bits per channel (Detectron2 reads it as PIL's "
                "mode \"L\"), this one has " +
                std::to_string(image.elemSize1() * 8) + " bits");
  }
  if (image.channels() == 1) return image;
  if (image.channels() == 3 || image.channels() == 4) return pil_luma(image);
  throw Error(path + ": a label map must have 1, 3 or 4 channels, this one has " +
              std::to_string(image.channels()));
}

}  // namespace detkit::data
