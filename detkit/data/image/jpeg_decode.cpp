#include "detkit/data/image/jpeg_decode.h"

#include <turbojpeg.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "detkit/data/image/exif_orientation.h"

namespace detkit::data {

namespace {

struct TjHandleDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};

}  // namespace

int jpeg_exif_orientation(const std::vector<unsigned char>& bytes) {
  size_t i = 2;  // after SOI
  while (i + 4 <= bytes.size() && bytes[i] == 0xFF) {
    const unsigned char marker = bytes[i + 1];
    if (marker == 0xDA || marker == 0xD9) return 1;  // image data reached: no EXIF
    const size_t length = static_cast<size_t>(bytes[i + 2]) << 8 | bytes[i + 3];
    if (length < 2 || i + 2 + length > bytes.size()) return 0;
    if (marker == 0xE1) {
      const unsigned char* payload = bytes.data() + i + 4;  // "Exif\0\0" + a TIFF block
      const size_t size = length - 2;
      if (size < 6 || std::memcmp(payload, "Exif\0\0", 6) != 0) {  // another APP1 (XMP...)
        i += 2 + length;
        continue;
      }
      const int orientation = exif_orientation_of_tiff(payload + 6, size - 6);
      if (orientation != 1) return orientation;
    }
    i += 2 + length;
  }
  return 0;
}

namespace {
void* decompressor() {  // one per thread
  thread_local std::unique_ptr<void, TjHandleDeleter> handle(tjInitDecompress());
  return handle.get();
}
}  // namespace

namespace {

// The first SOFn segment's size, read as libjpeg reads markers (OpenCV's fallback decoder): bytes
// between segments skipped up to the next 0xFF, fill bytes 0xFF skipped, standalone markers (TEM,
// RSTn) without a length; SOS or EOI end the search (a frame header comes before the scan).
bool jpeg_sof_size(const std::vector<unsigned char>& bytes, int64_t& width, int64_t& height) {
  size_t i = 2;
  while (i < bytes.size()) {
    while (i < bytes.size() && bytes[i] != 0xFF) ++i;  // libjpeg skips such garbage, warning
    while (i < bytes.size() && bytes[i] == 0xFF) ++i;
    if (i >= bytes.size()) return false;
    const unsigned char marker = bytes[i++];
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;  // no length
    if (marker == 0xDA || marker == 0xD9) return false;
    if (i + 2 > bytes.size()) return false;
    const size_t length = static_cast<size_t>(bytes[i]) << 8 | bytes[i + 1];
    const bool sof =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof) {
      if (length < 7 || i + 7 > bytes.size()) return false;
      height = static_cast<int64_t>(bytes[i + 3]) << 8 | bytes[i + 4];
      width = static_cast<int64_t>(bytes[i + 5]) << 8 | bytes[i + 6];
      return true;
    }
    if (length < 2) return false;
    i += length;
  }
  return false;
}

}  // namespace

bool jpeg_header_size(const std::vector<unsigned char>& bytes, int64_t& width, int64_t& height) {
  void* handle = decompressor();
  int w = 0, h = 0, subsampling = 0, colorspace = 0;
  if (!handle || tjDecompressHeader3(handle, bytes.data(), bytes.size(), &w, &h, &subsampling,
                                     &colorspace) != 0)
    // TurboJPEG refused the header (a table it does not take, ...): OpenCV's libjpeg may still
    // decode the frame, so its declared size is read here (found by fuzz.libfuzzer.image in CI:
    // a 12079 x 65082 frame whose decode allocated 2.4 GB).
    return jpeg_sof_size(bytes, width, height);
  width = w;
  height = h;
  return true;
}

cv::Mat decode_jpeg(const std::vector<unsigned char>& bytes, bool rgb) {
  void* handle = decompressor();
  if (!handle) return {};
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle, bytes.data(), bytes.size(), &width, &height, &subsampling,
                          &colorspace) != 0 ||
      colorspace == TJCS_CMYK || colorspace == TJCS_YCCK)
    return {};
  cv::Mat image(height, width, CV_8UC3);
  if (tjDecompress2(handle, bytes.data(), bytes.size(), image.data, width,
                    static_cast<int>(image.step), height, rgb ? TJPF_RGB : TJPF_BGR, 0) != 0)
    return {};  // an error, or a warning about corrupt data: the careful path decides
  return image;
}

}  // namespace detkit::data
