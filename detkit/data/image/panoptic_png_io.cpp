#include "detkit/data/image/panoptic_png_io.h"

#include <vector>

#include "detkit/data/image/image_io.h"
#include "detkit/utils/error.h"

namespace detkit::data {

cv::Mat read_panoptic_ids(const std::string& path) {
  const std::vector<unsigned char> bytes = read_checked_image_bytes(path);
  // UNCHANGED keeps the channels as stored: a grey file stays one channel (and is refused below
  // instead of being widened to grey RGB), palette PNGs come out as BGR like PIL's RGB.
  const cv::Mat image = decode_image_unchanged(bytes, path, "panoptic PNG");
  if (image.depth() != CV_8U) {
    throw Error(path + ": a panoptic PNG must have 8 bits per channel, this one has " +
                std::to_string(image.elemSize1() * 8) + " bits");
  }
  if (image.channels() != 3 && image.channels() != 4) {
    throw Error(path +
                ": a panoptic PNG must be RGB (segment id = R + 256 G + 256^2 B), this one "
                "has " +
                std::to_string(image.channels()) + " channel(s)");
  }
  cv::Mat ids(image.rows, image.cols, CV_32SC1);
  const int channels = image.channels();
  for (int y = 0; y < image.rows; ++y) {
    const uchar* in = image.ptr<uchar>(y);  // OpenCV's order: B, G, R[, A]
    int32_t* out = ids.ptr<int32_t>(y);
    for (int x = 0; x < image.cols; ++x, in += channels)
      out[x] = static_cast<int32_t>(in[2]) | static_cast<int32_t>(in[1]) << 8 |
               static_cast<int32_t>(in[0]) << 16;
  }
  return ids;
}

}  // namespace detkit::data
