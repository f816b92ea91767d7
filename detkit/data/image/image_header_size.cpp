// encoded_image_size (image_io.h): the width and height an image file declares, read from its
// header without decoding, for every format read_image refuses as a decompression bomb before
// decoding: JPEG, PNG, BMP, Netpbm (PBM / PGM / PPM / PAM / PFM), WebP, TIFF, Sun raster,
// Radiance HDR, JPEG 2000 and OpenEXR. Each reader takes the header as OpenCV 4.6's decoder for
// the format does (the same delimiters, the same fields), so a size OpenCV would allocate for
// is never missed here; where a header is malformed, reading a size OpenCV would not is harmless.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "detkit/data/image/image_io.h"
#include "detkit/data/image/jpeg_decode.h"

namespace detkit::data {
namespace {

using Bytes = std::vector<unsigned char>;

bool has_magic(const Bytes& b, const char* magic, size_t at = 0) {
  const size_t n = std::strlen(magic);
  return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
}

uint64_t little_endian(const Bytes& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | b[at + i];
  return v;
}

uint64_t big_endian(const Bytes& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | b[at + i];
  return v;
}

// Bytes [begin, end) as text.
std::string text_of(const Bytes& b, size_t begin, size_t end) {
  return std::string(reinterpret_cast<const char*>(b.data()) + begin, end - begin);
}

// An unsigned integer of `bytes` bytes at `at`, when the data holds it.
bool read_uint(const Bytes& b, size_t at, int bytes, bool little, uint64_t& value) {
  if (at > b.size() || b.size() - at < static_cast<size_t>(bytes)) return false;
  value = little ? little_endian(b, at, bytes) : big_endian(b, at, bytes);
  return true;
}

// PNG: the signature, then IHDR (length, "IHDR", width and height as big-endian uint32).
bool png_size(const Bytes& b, int64_t& width, int64_t& height) {
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (b.size() < 24 || std::memcmp(b.data(), kPng, 8) != 0 || !has_magic(b, "IHDR", 12))
    return false;
  width = big_endian(b, 16, 4);
  height = big_endian(b, 20, 4);
  return true;
}

// BMP: "BM", the info header's size at 14, then width and height: int32 (negative height:
// stored top-down), or uint16 in the 12-byte OS/2 core header.
bool bmp_size(const Bytes& b, int64_t& width, int64_t& height) {
  if (!has_magic(b, "BM") || b.size() < 26) return false;
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

// P1-P6 as OpenCV reads them: after whitespace and '#' comments (to the end of the line), a
// decimal number and the one byte that ends it, whatever that byte is ("1077`777" is 1077 then
// 777). False where there is no number.
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
  if (at < b.size()) ++at;  // the terminating byte
  return true;
}

// P1-P6: "P", the digit, a whitespace byte, then width and height, the header's first numbers.
bool netpbm_size(const Bytes& b, int64_t& width, int64_t& height) {
  if (b.size() < 3 || b[0] != 'P' || b[1] < '1' || b[1] > '6' || !std::isspace(b[2])) return false;
  size_t at = 2;
  return netpbm_number(b, at, width) && netpbm_number(b, at, height);
}

// PFM ("PF" / "Pf", a line break): width and height are the first two words, each as atoi reads
// it (a sign, digits, anything after them ignored).
bool pfm_size(const Bytes& b, int64_t& width, int64_t& height) {
  if (b.size() < 3 || b[0] != 'P' || (b[1] != 'F' && b[1] != 'f') || b[2] != '\n') return false;
  size_t at = 3;
  auto word = [&](int64_t& value) {  // as OpenCV: up to 2048 bytes, then (int) strtol's value
    const size_t begin = at, end = std::min(b.size(), at + 2048);
    while (at < end && !std::isspace(b[at])) ++at;
    value = static_cast<int32_t>(std::strtol(text_of(b, begin, at).c_str(), nullptr, 10));
    if (at < end) ++at;  // the whitespace byte ending the word
  };
  if (at >= b.size()) return false;
  word(width);
  if (at >= b.size()) return false;
  word(height);
  return true;
}

// PAM (P7, a line break): "KEYWORD value" lines up to ENDHDR, each keyword after any whitespace
// (blank lines included), its value after any whitespace to the end of the line ('\n' or '\r').
bool pam_size(const Bytes& b, int64_t& width, int64_t& height) {
  if (b.size() < 3 || b[0] != 'P' || b[1] != '7' || (b[2] != '\n' && b[2] != '\r')) return false;
  const auto line_end = [&](size_t i) { return i >= b.size() || b[i] == '\n' || b[i] == '\r'; };
  bool have_width = false, have_height = false;
  size_t at = 3;
  while (at < b.size()) {
    while (at < b.size() && std::isspace(b[at])) ++at;
    const size_t keyword = at;
    while (at < b.size() && !std::isspace(b[at])) ++at;
    const std::string name = text_of(b, keyword, at);
    if (name == "ENDHDR") break;
    const bool is_width = name == "WIDTH", is_height = name == "HEIGHT";
    if ((is_width || is_height) && !line_end(at)) {
      while (at < b.size() && std::isspace(b[at])) ++at;
      int64_t value = 0;
      size_t digits = at;
      if (netpbm_number(b, digits, value)) {
        (is_width ? width : height) = value;
        (is_width ? have_width : have_height) = true;
      }
    }
    while (!line_end(at)) ++at;  // the rest of the line (a comment's too)
  }
  return have_width && have_height;
}

// WebP: "RIFF" size "WEBP", then the first chunk: "VP8 " (lossy: a key frame's 14-bit sizes
// after its start code 9D 01 2A), "VP8L" (lossless: 14-bit sizes minus one, after the 0x2F
// signature) or "VP8X" (extended: the canvas's 24-bit sizes minus one).
bool webp_size(const Bytes& b, int64_t& width, int64_t& height) {
  if (!has_magic(b, "RIFF") || !has_magic(b, "WEBP", 8) || b.size() < 30) return false;
  if (has_magic(b, "VP8 ", 12)) {
    if (b[23] != 0x9D || b[24] != 0x01 || b[25] != 0x2A) return false;
    width = little_endian(b, 26, 2) & 0x3FFF;
    height = little_endian(b, 28, 2) & 0x3FFF;
    return true;
  }
  if (has_magic(b, "VP8L", 12)) {
    if (b[20] != 0x2F) return false;
    const int64_t bits = little_endian(b, 21, 4);
    width = (bits & 0x3FFF) + 1;
    height = ((bits >> 14) & 0x3FFF) + 1;
    return true;
  }
  if (has_magic(b, "VP8X", 12)) {
    width = little_endian(b, 24, 3) + 1;
    height = little_endian(b, 27, 3) + 1;
    return true;
  }
  return false;
}

// TIFF and BigTIFF: "II" (little-endian) or "MM", version 42 (or 43: BigTIFF, 8-byte offsets and
// counts), the first IFD's offset, then its entries (tag, type, count, value or its offset).
// ImageWidth (256) and ImageLength (257) in every integer type libtiff accepts for them (BYTE,
// SHORT, LONG, IFD, LONG8, IFD8 and their signed kinds); negative values are libtiff's errors.
bool tiff_size(const Bytes& b, int64_t& width, int64_t& height) {
  if (b.size() < 8 || !((b[0] == 'I' && b[1] == 'I') || (b[0] == 'M' && b[1] == 'M')))
    return false;
  const bool little = b[0] == 'I';
  uint64_t version = 0, ifd = 0, entries = 0;
  read_uint(b, 2, 2, little, version);
  if (version != 42 && version != 43) return false;
  const bool big = version == 43;
  const int word = big ? 8 : 4;  // offsets, counts and the inline value field
  if (!read_uint(b, big ? 8 : 4, word, little, ifd) ||
      !read_uint(b, static_cast<size_t>(ifd), big ? 8 : 2, little, entries))
    return false;
  const size_t first = static_cast<size_t>(ifd) + (big ? 8 : 2), entry_size = big ? 20 : 12;
  bool have_width = false, have_height = false;
  for (uint64_t i = 0; i < entries && first + i * entry_size < b.size(); ++i) {
    const size_t at = first + static_cast<size_t>(i) * entry_size;
    uint64_t tag = 0, type = 0, count = 0, value = 0, offset = 0;
    if (!read_uint(b, at, 2, little, tag) || (tag != 256 && tag != 257) ||
        !read_uint(b, at + 2, 2, little, type) || !read_uint(b, at + 4, word, little, count) ||
        count != 1)
      continue;
    int bytes = 0;
    bool is_signed = false;
    switch (type) {
      case 6: is_signed = true; [[fallthrough]];   // SBYTE
      case 1: bytes = 1; break;                    // BYTE
      case 8: is_signed = true; [[fallthrough]];   // SSHORT
      case 3: bytes = 2; break;                    // SHORT
      case 9: is_signed = true; [[fallthrough]];   // SLONG
      case 4: case 13: bytes = 4; break;           // LONG, IFD
      case 17: is_signed = true; [[fallthrough]];  // SLONG8
      case 16: case 18: bytes = 8; break;          // LONG8, IFD8
      default: continue;
    }
    const size_t value_at = at + 4 + word;
    if (bytes > word && !read_uint(b, value_at, word, little, offset)) continue;
    if (!read_uint(b, bytes > word ? static_cast<size_t>(offset) : value_at, bytes, little, value))
      continue;
    if (is_signed && (value >> (8 * bytes - 1) & 1)) continue;  // negative
    // Of repeated entries the largest counts: no repetition lets a large size through.
    int64_t& side = tag == 256 ? width : height;
    bool& have = tag == 256 ? have_width : have_height;
    const int64_t v = static_cast<int64_t>(std::min<uint64_t>(value, uint64_t{1} << 62));
    side = have ? std::max(side, v) : v;
    have = true;
  }
  return have_width && have_height;
}

// Sun raster: the magic 59 A6 6A 95, then width and height as big-endian int32.
bool sun_raster_size(const Bytes& b, int64_t& width, int64_t& height) {
  static const unsigned char kMagic[4] = {0x59, 0xA6, 0x6A, 0x95};
  if (b.size() < 12 || std::memcmp(b.data(), kMagic, 4) != 0) return false;
  width = static_cast<int32_t>(big_endian(b, 4, 4));
  height = static_cast<int32_t>(big_endian(b, 8, 4));
  return true;
}

// Radiance HDR ("#?RGBE" or "#?RADIANCE") as OpenCV reads it: lines as fgets with a 128-byte
// buffer returns them (127 bytes at most, through the '\n'), none empty, up to the line
// "FORMAT=32-bit_rle_rgbe"; a blank line; then sscanf(line, "-Y %d +X %d") (the same libc call).
bool hdr_size(const Bytes& b, int64_t& width, int64_t& height) {
  if (!has_magic(b, "#?RGBE") && !has_magic(b, "#?RADIANCE")) return false;
  size_t at = 0;
  auto next_line = [&] {  // empty at the end of the data, where fgets returns NULL
    const size_t begin = at;
    while (at < b.size() && at - begin < 127)
      if (b[at++] == '\n') break;
    return text_of(b, begin, at);
  };
  for (std::string line = next_line(); std::strcmp(line.c_str(), "FORMAT=32-bit_rle_rgbe\n") != 0;
       line = next_line())
    if (line.empty() || line[0] == '\0' || line[0] == '\n') return false;
  if (std::strcmp(next_line().c_str(), "\n") != 0) return false;
  int h = 0, w = 0;
  if (std::sscanf(next_line().c_str(), "-Y %d +X %d", &h, &w) < 2) return false;
  width = w;
  height = h;
  return true;
}

// A JPEG 2000 codestream's SIZ segment (after SOC FF 4F, the marker FF 51, Lsiz, Rsiz): the
// reference grid's Xsiz, Ysiz and image offsets XOsiz, YOsiz; the image is Xsiz - XOsiz wide.
bool j2k_codestream_size(const Bytes& b, size_t at, int64_t& width, int64_t& height) {
  if (at > b.size() || b.size() - at < 24 || b[at] != 0xFF || b[at + 1] != 0x4F ||
      b[at + 2] != 0xFF || b[at + 3] != 0x51)
    return false;
  auto field = [&](size_t offset) { return static_cast<int64_t>(big_endian(b, at + offset, 4)); };
  width = field(8) - field(16);
  height = field(12) - field(20);
  return true;
}

// JPEG 2000: a bare codestream, or a JP2 file (its signature box) whose top-level boxes (length,
// type; length 1: a 64-bit length follows, 0: to the end) lead to the codestream box "jp2c".
bool jpeg2000_size(const Bytes& b, int64_t& width, int64_t& height) {
  static const unsigned char kJp2[12] = {0, 0, 0, 12, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A};
  if (j2k_codestream_size(b, 0, width, height)) return true;
  if (b.size() < 12 || std::memcmp(b.data(), kJp2, 12) != 0) return false;
  uint64_t at = 0;
  while (at + 8 <= b.size()) {
    uint64_t length = 0, header = 8;
    read_uint(b, static_cast<size_t>(at), 4, false, length);
    if (length == 1) {
      if (!read_uint(b, static_cast<size_t>(at) + 8, 8, false, length)) return false;
      header = 16;
    }
    if (has_magic(b, "jp2c", static_cast<size_t>(at) + 4))
      return j2k_codestream_size(b, static_cast<size_t>(at + header), width, height);
    if (length < header || length > b.size() - at) return false;  // 0 (to the end) included
    at += length;
  }
  return false;
}

// OpenEXR: the magic 76 2F 31 01, a version word, then the first header's attributes (name and
// type name, each NUL-terminated, a little-endian int32 size, the value) up to an empty name.
// "dataWindow" (box2i: xMin, yMin, xMax, yMax as int32) gives the size.
bool exr_size(const Bytes& b, int64_t& width, int64_t& height) {
  static const unsigned char kMagic[4] = {0x76, 0x2F, 0x31, 0x01};
  if (b.size() < 8 || std::memcmp(b.data(), kMagic, 4) != 0) return false;
  auto text_at = [&](size_t from, size_t& end) {  // a NUL-terminated string; end: after its NUL
    const auto nul = std::find(b.begin() + static_cast<std::ptrdiff_t>(from), b.end(), 0);
    end = static_cast<size_t>(nul - b.begin()) + 1;
    return text_of(b, from, static_cast<size_t>(nul - b.begin()));
  };
  size_t at = 8;
  while (at < b.size() && b[at] != 0) {
    size_t type_at = 0, size_at = 0;
    const std::string name = text_at(at, type_at);
    if (type_at >= b.size()) return false;
    const std::string type = text_at(type_at, size_at);
    uint64_t size = 0;
    if (!read_uint(b, size_at, 4, true, size)) return false;
    const size_t value = size_at + 4;
    if (name == "dataWindow" && type == "box2i" && size == 16 && value + 16 <= b.size()) {
      auto corner = [&](size_t i) { return static_cast<int64_t>(static_cast<int32_t>(
                                        little_endian(b, value + 4 * i, 4))); };
      width = corner(2) - corner(0) + 1;
      height = corner(3) - corner(1) + 1;
      return true;
    }
    if (size > b.size() - value) return false;
    at = value + static_cast<size_t>(size);
  }
  return false;
}

}  // namespace

bool encoded_image_size(const Bytes& bytes, int64_t& width, int64_t& height) {
  if (bytes.size() >= 2 && bytes[0] == 0xFF && bytes[1] == 0xD8)
    return jpeg_header_size(bytes, width, height);
  for (auto* reader : {&png_size, &bmp_size, &netpbm_size, &pfm_size, &pam_size, &webp_size,
                        &tiff_size, &sun_raster_size, &hdr_size, &jpeg2000_size, &exr_size})
    if (reader(bytes, width, height)) return true;
  return false;
}

}  // namespace detkit::data
