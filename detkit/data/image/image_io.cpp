#include "detkit/data/image/image_io.h"

#include <cstring>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "detkit/data/image/exif_orientation.h"
#include "detkit/data/image/jpeg_decode.h"
#include "detkit/data/image/opencv_codecs.h"
#include "detkit/data/image/png_codec.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

// Walks a JPEG's marker segments and entropy-coded scans; true when an end-of-image marker
// (FF D9) is reached. Inside scans a data byte FF is always followed by 00, and FF D0..D7 are
// restart markers, so any other FF xx is a real marker.
bool jpeg_reaches_end_marker(const std::vector<unsigned char>& b) {
  size_t i = 2;  // after FF D8
  const size_t n = b.size();
  while (i + 1 < n) {
    if (b[i] != 0xFF) return false;  // not at a marker: corrupt
    const unsigned char marker = b[i + 1];
    if (marker == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (marker == 0xD9) return true;
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {  // no length field
      i += 2;
      continue;
    }
    if (i + 3 >= n) return false;
    const size_t length = (static_cast<size_t>(b[i + 2]) << 8) | b[i + 3];
    i += 2 + length;
    if (marker != 0xDA) continue;  // not start-of-scan: the segment is skipped whole
    // Entropy-coded data runs to the next marker that is not a stuffed byte or a restart.
    while (i + 1 < n) {
      if (b[i] == 0xFF && b[i + 1] != 0x00 && !(b[i + 1] >= 0xD0 && b[i + 1] <= 0xD7)) break;
      ++i;
    }
  }
  return false;
}

bool png_has_end_chunk(const std::vector<unsigned char>& b) {
  // The last chunk is IEND: length 0, type "IEND", CRC (12 bytes in all).
  return b.size() >= 12 + 8 && std::memcmp(b.data() + b.size() - 8, "IEND", 4) == 0;
}

}  // namespace

std::string truncation_problem(const std::vector<unsigned char>& bytes) {
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (bytes.size() >= 2 && bytes[0] == 0xFF && bytes[1] == 0xD8) {
    if (!jpeg_reaches_end_marker(bytes)) {
      return "JPEG data ends before its end-of-image marker (truncated or corrupt)";
    }
  } else if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) {
    if (!png_has_end_chunk(bytes)) return "PNG data ends before its IEND chunk (truncated)";
  }
  return "";
}

std::vector<unsigned char> read_checked_image_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(path + ": image file not found or not readable");
  std::vector<unsigned char> bytes(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size())))
    throw Error(path + ": error while reading the image file");
  if (bytes.empty()) throw Error(path + ": image file is empty");
  const std::string truncated = truncation_problem(bytes);
  if (!truncated.empty()) throw Error(path + ": " + truncated);
  int64_t width = 0, height = 0;
  // A side over the limit is refused before the product, which then cannot overflow; a side of
  // zero or less (OpenCV refuses it) is not multiplied.
  if (encoded_image_size(bytes, width, height) &&
      (width > kMaxImagePixels || height > kMaxImagePixels ||
       (width > 0 && height > 0 && width * height > kMaxImagePixels)))
    throw Error(path + ": its header declares " + std::to_string(width) + "x" +
                std::to_string(height) + " (width x height) pixels, over the limit of " +
                std::to_string(kMaxImagePixels) +
                " (PIL's decompression-bomb threshold); not decoded");
  // DICOM ("DICM" after a 128-byte preamble): OpenCV hands it to GDCM, whose reader aborts the
  // process on a malformed file (an assert; found by fuzz.libfuzzer.image in CI). PIL, which
  // Detectron2 reads images with, has no DICOM reader either.
  if (bytes.size() >= 132 && std::memcmp(bytes.data() + 128, "DICM", 4) == 0)
    throw Error(path +
                ": a DICOM file, which detkit does not read (nor does Detectron2's PIL); "
                "convert it to PNG or JPEG");
  return bytes;
}

cv::Mat read_image(const std::string& path, const std::string& format) {
  if (format != "BGR" && format != "RGB") {
    throw Error("INPUT.FORMAT must be 'BGR' or 'RGB', got '" + format + "'");
  }
  const std::vector<unsigned char> bytes = read_checked_image_bytes(path);
  const bool rgb = format == "RGB";
  if (bytes.size() >= 2 && bytes[0] == 0xFF && bytes[1] == 0xD8) {
    // TurboJPEG, then the EXIF rotation; CMYK, damaged data or an unreadable EXIF block go to
    // OpenCV below, as libjpeg there decodes what TurboJPEG refuses.
    const int orientation = jpeg_exif_orientation(bytes);
    if (orientation != 0) {
      cv::Mat image = decode_jpeg(bytes, rgb);
      if (!image.empty()) return apply_exif_orientation(image, orientation);
    }
  } else if (is_png(bytes)) {
    std::string error;
    int orientation = 1;
    cv::Mat image = decode_png(bytes, PngChannels::kColor, &error, &orientation);
    if (image.empty()) throw Error(path + ": not a readable image (PNG: " + error + ")");
    if (rgb) cv::cvtColor(image, image, cv::COLOR_BGR2RGB);
    return apply_exif_orientation(image, orientation);
  }
  cv::Mat image;
  try {
    image = opencv_imdecode(bytes, cv::IMREAD_COLOR, path);  // BGR, EXIF orientation applied
  } catch (const cv::Exception& e) {
    // OpenCV refuses some inputs by throwing (a size over its own pixel limit, in a format whose
    // header is not read above, or a JPEG header TurboJPEG did not parse): named here too.
    throw Error(path + ": not a readable image (OpenCV: " + e.err + ")");
  }
  if (image.empty()) throw Error(path + ": not a readable image (OpenCV could not decode it)");
  if (rgb) cv::cvtColor(image, image, cv::COLOR_BGR2RGB);
  return image;
}

cv::Mat decode_image_unchanged(const std::vector<unsigned char>& bytes, const std::string& what,
                               const std::string& kind) {
  cv::Mat image;
  if (is_png(bytes)) {
    std::string error;
    image = decode_png(bytes, PngChannels::kUnchanged, &error);
    if (image.empty()) throw Error(what + ": not a readable " + kind + " (PNG: " + error + ")");
    return image;
  }
  try {
    image = opencv_imdecode(bytes, cv::IMREAD_UNCHANGED, what);
  } catch (const cv::Exception& e) {
    throw Error(what + ": not a readable " + kind + " (OpenCV: " + e.err + ")");
  }
  if (image.empty())
    throw Error(what + ": not a readable " + kind + " (OpenCV could not decode it)");
  return image;
}

}  // namespace detkit::data
