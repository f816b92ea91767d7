#include "detkit/data/image/exif_orientation.h"

#include <cstdint>
#include <cstring>

namespace detkit::data {
namespace {

// Reads EXIF's TIFF integers in the block's byte order.
struct TiffReader {
  const unsigned char* data;
  size_t size;
  bool big_endian;
  bool u16(size_t at, uint32_t* v) const {
    if (at + 2 > size) return false;
    *v = big_endian ? (data[at] << 8 | data[at + 1]) : (data[at + 1] << 8 | data[at]);
    return true;
  }
  bool u32(size_t at, uint32_t* v) const {
    uint32_t hi = 0, lo = 0;
    if (!u16(at, big_endian ? &hi : &lo) || !u16(at + 2, big_endian ? &lo : &hi)) return false;
    *v = hi << 16 | lo;
    return true;
  }
};

}  // namespace

int exif_orientation_of_tiff(const unsigned char* block, size_t size) {
  TiffReader tiff{block, size, false};
  if (tiff.size < 8) return 0;
  if (std::memcmp(tiff.data, "MM", 2) == 0)
    tiff.big_endian = true;
  else if (std::memcmp(tiff.data, "II", 2) != 0)
    return 0;
  uint32_t magic = 0, ifd = 0, entries = 0;
  if (!tiff.u16(2, &magic) || magic != 42 || !tiff.u32(4, &ifd) || !tiff.u16(ifd, &entries))
    return 0;
  for (uint32_t e = 0; e < entries; ++e) {
    const size_t entry = ifd + 2 + 12 * static_cast<size_t>(e);
    uint32_t tag = 0, value = 0;
    if (!tiff.u16(entry, &tag) || !tiff.u16(entry + 8, &value)) return 0;
    if (tag == 0x0112) return value >= 1 && value <= 8 ? static_cast<int>(value) : 0;
  }
  return 1;
}

cv::Mat apply_exif_orientation(const cv::Mat& image, int orientation) {
  if (orientation < 2 || orientation > 8) return image;
  cv::Mat out;
  if (orientation <= 4) {  // no transposition: a flip about one axis or both
    cv::flip(image, out, orientation == 2 ? 1 : orientation == 3 ? -1 : 0);
    return out;
  }
  cv::Mat transposed;
  cv::transpose(image, transposed);
  if (orientation == 5) return transposed;
  cv::flip(transposed, out, orientation == 6 ? 1 : orientation == 7 ? -1 : 0);
  return out;
}

}  // namespace detkit::data
