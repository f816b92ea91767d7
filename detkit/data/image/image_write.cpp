#include "detkit/data/image/image_write.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "detkit/data/image/jpeg_encode.h"
#include "detkit/data/image/opencv_codecs.h"
#include "detkit/data/image/png_codec.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::data {

std::vector<unsigned char> encode_image(const std::string& extension, const cv::Mat& image,
                                        const std::string& what) {
  std::string lower = extension;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  try {
    if (lower == ".png") return encode_png(image);
    if (lower == ".jpg" || lower == ".jpeg" || lower == ".jpe") return encode_jpeg(image);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
  if (lower.empty()) throw Error(what + ": no file extension to choose the image format by");
  std::vector<unsigned char> bytes;
  bool encoded = false;
  try {
    encoded = opencv_imencode(lower, image, &bytes, what);
  } catch (const cv::Exception& e) {
    throw Error(what + ": cannot encode the image as '" + lower + "' (OpenCV: " + e.err + ")");
  }
  if (!encoded) throw Error(what + ": cannot encode the image as '" + lower + "' (OpenCV)");
  return bytes;
}

void write_image(const std::string& path, const cv::Mat& image) {
  const std::vector<unsigned char> bytes =
      encode_image(std::filesystem::path(path).extension().string(), image, path);
  atomic_write(path, std::string(bytes.begin(), bytes.end()));
}

}  // namespace detkit::data
