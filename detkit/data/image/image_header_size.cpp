// encoded_image_size (image_io.h): the width and height an image file declares, read from its
// header without decoding, for every format read_image refuses as a decompression bomb before
// decoding: JPEG, PNG, BMP, Netpbm (PBM / PGM / PPM / PAM / PFM), WebP and TIFF.
#include <algorithm>
#include <cctype>
#include <cstring>

#include "detkit/data/image/image_io.h"
#include "detkit/data/image/jpeg_decode.h"

namespace detkit::data {
namespace {

using Bytes = std::vector<unsigned char>;

bool starts_with(const Bytes& b, const char* magic, size_t at = 0) {
  const size_t n = std::strlen(magic);
  return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
}

int64_t little_endian(const Bytes& b, size_t at, int bytes) {
  int64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | b[at + i];
  return v;
}

int64_t big_endian(const Bytes& b, size_t at, int bytes) {
  int64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | b[at + i];
  return v;
}

// PNG: the signature, then IHDR (length, "IHDR", width and height as big-endian uint32).
bool png_size(const Bytes& b, int64_t& width, int64_t& height) {
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (b.size() < 24 || std::memcmp(b.data(), kPng, 8) != 0 || !starts_with(b, "IHDR", 12))
    return false;
  width = big_endian(b, 16, 4);
  height = big_endian(b, 20, 4);
  return true;
}

// BMP: "BM", the info header's size at 14, then width and height: int32 (negative height:
// stored top-down), or uint16 in the 12-byte OS/2 core header.
bool bmp_size(const Bytes& b, int64_t& width, int64_t& height) {
  if (!starts_with(b, "BM") || b.size() < 26) return false;
  if (little_endian(b, 14, 4) == 12) {
    width = little_endian(b, 18, 2);
    height = little_endian(b, 20, 2);
    return true;
  }
  width = static_cast<int32_t>(little_endian(b, 18, 4));
  height = static_cast<int32_t>(little_endian(b, 22, 4));
  width = width < 0 ? -width : width;
  height = height < 0 ? -height : height;
  return true;
}

// Netpbm's header fields after the magic: whitespace, '#' comments to the end of the line, then
// a decimal number. False where there is none.
bool netpbm_number(const Bytes& b, size_t& at, int64_t& value) {
  while (at < b.size()) {
    if (b[at] == '#') {
      while (at < b.size() && b[at] != '\n' && b[at] != '\r') ++at;
    } else if (std::isspace(b[at])) {
      ++at;
    } else {
      break;
    }
  }
  if (at >= b.size() || !std::isdigit(b[at])) return false;
  value = 0;
  while (at < b.size() && std::isdigit(b[at]) && value < (int64_t{1} << 40))
    value = value * 10 + (b[at++] - '0');
  return true;
}

// P1-P6 and PFM ("PF" / "Pf"): width and height are the header's first two numbers. PAM (P7):
// "WIDTH n" and "HEIGHT n" lines before "ENDHDR".
bool netpbm_size(const Bytes& b, int64_t& width, int64_t& height) {
  if (b.size() < 3 || b[0] != 'P') return false;
  size_t at = 2;
  if ((b[1] >= '1' && b[1] <= '6') || b[1] == 'F' || b[1] == 'f')
    return netpbm_number(b, at, width) && netpbm_number(b, at, height);
  if (b[1] != '7') return false;
  bool have_width = false, have_height = false;
  size_t line = 2;
  while (line < std::min<size_t>(b.size(), 4096) && !(have_width && have_height)) {
    size_t width_at = line + 5, height_at = line + 6;  // after the keyword
    if (starts_with(b, "WIDTH", line)) have_width = netpbm_number(b, width_at, width);
    if (starts_with(b, "HEIGHT", line)) have_height = netpbm_number(b, height_at, height);
    if (starts_with(b, "ENDHDR", line)) break;
    while (line < b.size() && b[line] != '\n') ++line;
    ++line;
  }
  return have_width && have_height;
}

// WebP: "RIFF" size "WEBP", then the first chunk: "VP8 " (lossy: a key frame's 14-bit sizes
// after its start code 9D 01 2A), "VP8L" (lossless: 14-bit sizes minus one, after the 0x2F
// signature) or "VP8X" (extended: the canvas's 24-bit sizes minus one).
bool webp_size(const Bytes& b, int64_t& width, int64_t& height) {
  if (!starts_with(b, "RIFF") || !starts_with(b, "WEBP", 8) || b.size() < 30) return false;
  if (starts_with(b, "VP8 ", 12)) {
    if (b[23] != 0x9D || b[24] != 0x01 || b[25] != 0x2A) return false;
    width = little_endian(b, 26, 2) & 0x3FFF;
    height = little_endian(b, 28, 2) & 0x3FFF;
    return true;
  }
  if (starts_with(b, "VP8L", 12)) {
    if (b[20] != 0x2F) return false;
    const int64_t bits = little_endian(b, 21, 4);
    width = (bits & 0x3FFF) + 1;
    height = ((bits >> 14) & 0x3FFF) + 1;
    return true;
  }
  if (starts_with(b, "VP8X", 12)) {
    width = little_endian(b, 24, 3) + 1;
    height = little_endian(b, 27, 3) + 1;
    return true;
  }
  return false;
}

// TIFF: "II*\0" (little-endian) or "MM\0*" (big-endian), the first IFD's offset, then its
// entries (tag, type, count, value): ImageWidth (256) and ImageLength (257), SHORT or LONG.
bool tiff_size(const Bytes& b, int64_t& width, int64_t& height) {
  const bool little = starts_with(b, "II*") && b.size() > 3 && b[3] == 0;
  const bool big = b.size() > 3 && b[0] == 'M' && b[1] == 'M' && b[2] == 0 && b[3] == '*';
  if (!little && !big) return false;
  auto read = [&](size_t at, int bytes) {
    return little ? little_endian(b, at, bytes) : big_endian(b, at, bytes);
  };
  if (b.size() < 8) return false;
  const size_t ifd = static_cast<size_t>(read(4, 4));
  if (ifd + 2 > b.size()) return false;
  const int64_t entries = read(ifd, 2);
  bool have_width = false, have_height = false;
  for (int64_t i = 0; i < entries; ++i) {
    const size_t at = ifd + 2 + 12 * static_cast<size_t>(i);
    if (at + 12 > b.size()) break;
    const int64_t tag = read(at, 2), type = read(at + 2, 2);
    if ((tag != 256 && tag != 257) || (type != 3 && type != 4)) continue;
    const int64_t value = type == 3 ? read(at + 8, 2) : read(at + 8, 4);
    (tag == 256 ? width : height) = value;
    (tag == 256 ? have_width : have_height) = true;
  }
  return have_width && have_height;
}

}  // namespace

bool encoded_image_size(const Bytes& bytes, int64_t& width, int64_t& height) {
  if (bytes.size() >= 2 && bytes[0] == 0xFF && bytes[1] == 0xD8)
    return jpeg_header_size(bytes, width, height);
  for (auto* reader : {&png_size, &bmp_size, &netpbm_size, &webp_size, &tiff_size})
    if (reader(bytes, width, height)) return true;
  return false;
}

}  // namespace detkit::data
