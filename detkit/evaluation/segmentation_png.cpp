#include "detkit/evaluation/segmentation_png.h"

#include <opencv2/core.hpp>
#include <vector>

#include "detkit/data/image/png_codec.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::evaluation {
namespace {

constexpr int kPngPaletteColorType = 3;

// The colour type of the PNG's IHDR chunk (byte 25), or -1 when the bytes are not a PNG.
int png_color_type(const std::string& bytes) {
  static const char kSignature[] = "\x89PNG\r\n\x1a\n";
  if (bytes.size() < 26 || bytes.compare(0, 8, kSignature, 8) != 0 ||
      bytes.compare(12, 4, "IHDR") != 0)
    return -1;
  return static_cast<unsigned char>(bytes[25]);
}

cv::Mat decode_png(const std::string& bytes, const std::string& name) {
  if (png_color_type(bytes) < 0) throw Error(name + ": not a PNG file");
  std::string error;
  cv::Mat image = data::decode_png(std::vector<unsigned char>(bytes.begin(), bytes.end()),
                                   data::PngChannels::kUnchanged, &error);
  if (image.empty())
    throw Error(name + ": the PNG cannot be decoded (corrupt or truncated: " + error + ")");
  return image;
}

}  // namespace

PixelMap read_label_png(const std::string& path) {
  const std::string bytes = read_file(path);
  if (png_color_type(bytes) == kPngPaletteColorType)
    throw Error(path + ": a palette PNG; semantic labels must be one 8- or 16-bit grey channel");
  const cv::Mat image = decode_png(bytes, path);
  if (image.channels() != 1)
    throw Error(path + ": semantic labels must be one channel, the PNG has " +
                std::to_string(image.channels()));
  PixelMap map{image.rows, image.cols, {}};
  map.values.resize(static_cast<size_t>(image.total()));
  size_t i = 0;
  for (int y = 0; y < image.rows; ++y) {
    if (image.depth() == CV_8U) {
      const uint8_t* row = image.ptr<uint8_t>(y);
      for (int x = 0; x < image.cols; ++x) map.values[i++] = row[x];
    } else if (image.depth() == CV_16U) {
      const uint16_t* row = image.ptr<uint16_t>(y);
      for (int x = 0; x < image.cols; ++x) map.values[i++] = row[x];
    } else {
      throw Error(path + ": semantic labels must be 8 or 16 bits per pixel");
    }
  }
  return map;
}

PixelMap decode_panoptic_png(const std::string& png, const std::string& name) {
  const cv::Mat image = decode_png(png, name);
  if (image.depth() != CV_8U || (image.channels() != 3 && image.channels() != 4))
    throw Error(name +
                ": a panoptic PNG must be 8-bit RGB (ids R + 256 G + 256^2 B), this one has " +
                std::to_string(image.channels()) + " channel(s) of " +
                (image.depth() == CV_8U ? "8" : "16") + " bits");
  PixelMap map{image.rows, image.cols, {}};
  map.values.resize(static_cast<size_t>(image.total()));
  const int channels = image.channels();
  size_t i = 0;
  for (int y = 0; y < image.rows; ++y) {
    const uint8_t* p = image.ptr<uint8_t>(y);
    for (int x = 0; x < image.cols; ++x, p += channels)  // OpenCV's order: B, G, R(, A)
      map.values[i++] = int64_t{p[2]} + 256 * int64_t{p[1]} + 65536 * int64_t{p[0]};
  }
  return map;
}

PixelMap read_panoptic_png(const std::string& path) {
  return decode_panoptic_png(read_file(path), path);
}

std::string encode_panoptic_png(const int32_t* ids, int64_t height, int64_t width,
                                const std::string& name) {
  cv::Mat image(static_cast<int>(height), static_cast<int>(width), CV_8UC3);
  const int32_t* id = ids;
  for (int y = 0; y < image.rows; ++y) {
    uint8_t* p = image.ptr<uint8_t>(y);
    for (int x = 0; x < image.cols; ++x, ++id, p += 3) {
      if (*id < 0 || *id >= (1 << 24))
        throw Error(name + ": segment id " + std::to_string(*id) + " at (" + std::to_string(y) +
                    ", " + std::to_string(x) + ") does not fit a panoptic PNG's 24 bits");
      p[0] = static_cast<uint8_t>(*id >> 16);
      p[1] = static_cast<uint8_t>(*id >> 8);
      p[2] = static_cast<uint8_t>(*id);
    }
  }
  const std::vector<unsigned char> png = data::encode_png(image);
  return std::string(png.begin(), png.end());
}

void check_pixel_map_size(const PixelMap& map, int64_t height, int64_t width,
                          const std::string& name) {
  if (map.height != height || map.width != width)
    throw Error(name + ": size " + std::to_string(map.height) + "x" + std::to_string(map.width) +
                " (HxW), expected " + std::to_string(height) + "x" + std::to_string(width));
}

}  // namespace detkit::evaluation
