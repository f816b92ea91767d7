// detkit's PNG code (libpng) against OpenCV's imdecode / imencode, the reader it replaces: every
// PNG colour type and bit depth, with and without transparency, interlaced or not, in both the
// IMREAD_UNCHANGED and IMREAD_COLOR forms; EXIF orientation from an eXIf chunk; round trips of
// encode_png; damaged files refused with libpng's reason.
#include <gtest/gtest.h>
#include <png.h>

#include <csetjmp>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <random>

#include "detkit/data/image/image_io.h"
#include "detkit/data/image/png_codec.h"
#include "detkit/utils/error.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

struct PngSpec {
  int color_type;
  int bit_depth;
  bool transparency;  // a tRNS chunk (grey, RGB, palette)
  bool interlaced;
  int orientation;  // an eXIf chunk's orientation; 0 for none
};

std::string describe(const PngSpec& s) {
  return "colour type " + std::to_string(s.color_type) + ", " + std::to_string(s.bit_depth) +
         " bits" + (s.transparency ? ", tRNS" : "") + (s.interlaced ? ", Adam7" : "") +
         (s.orientation ? ", eXIf orientation " + std::to_string(s.orientation) : "");
}

void append(png_structp png, png_bytep data, size_t n) {
  auto* out = static_cast<std::vector<unsigned char>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}

// The TIFF block of an EXIF with one orientation tag (little-endian).
std::vector<unsigned char> exif_block(int orientation) {
  return {'I',
          'I',
          42,
          0,
          8,
          0,
          0,
          0,
          1,
          0,
          0x12,
          0x01,
          3,
          0,
          1,
          0,
          0,
          0,
          static_cast<unsigned char>(orientation),
          0,
          0,
          0,
          0,
          0,
          0,
          0};
}

// libpng writes the file; only trivially destructible locals live past setjmp.
bool write_with_libpng(const PngSpec& s, int width, int height, png_bytepp rows,
                       std::vector<unsigned char>* out, png_bytep exif, png_uint_32 exif_size) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, out, append, nullptr);
  png_set_IHDR(png, info, width, height, s.bit_depth, s.color_type,
               s.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_color palette[256];
  png_byte alpha[256];
  png_color_16 key{};
  if (s.color_type == PNG_COLOR_TYPE_PALETTE) {
    for (int i = 0; i < 256; ++i) {
      palette[i] = {static_cast<png_byte>(i * 7), static_cast<png_byte>(255 - i),
                    static_cast<png_byte>(i * 13)};
      alpha[i] = static_cast<png_byte>(i * 31);
    }
    png_set_PLTE(png, info, palette, 1 << s.bit_depth);
  }
  if (s.transparency) {
    key.gray = key.red = 1;
    key.green = 2;
    key.blue = 3;
    png_set_tRNS(png, info, alpha, s.color_type == PNG_COLOR_TYPE_PALETTE ? 3 : 0, &key);
  }
  if (exif) png_set_eXIf_1(png, info, exif_size, exif);
  png_write_info(png, info);
  if (s.interlaced) png_set_interlace_handling(png);
  png_write_image(png, rows);
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return true;
}

std::vector<unsigned char> make_png(const PngSpec& s, int width, int height, unsigned seed) {
  const int samples = s.color_type == PNG_COLOR_TYPE_GRAY_ALPHA  ? 2
                      : s.color_type == PNG_COLOR_TYPE_RGB       ? 3
                      : s.color_type == PNG_COLOR_TYPE_RGB_ALPHA ? 4
                                                                 : 1;
  const size_t row_bytes = (static_cast<size_t>(width) * samples * s.bit_depth + 7) / 8;
  std::vector<unsigned char> pixels(row_bytes * height);
  std::mt19937 random(seed);
  for (auto& p : pixels) p = static_cast<unsigned char>(random() % 4 == 0 ? 1 : random());
  std::vector<png_bytep> rows(height);
  for (int y = 0; y < height; ++y) rows[y] = pixels.data() + row_bytes * y;
  std::vector<unsigned char> exif = exif_block(s.orientation);
  std::vector<unsigned char> out;
  EXPECT_TRUE(write_with_libpng(s, width, height, rows.data(), &out,
                                s.orientation ? exif.data() : nullptr,
                                static_cast<png_uint_32>(exif.size())))
      << describe(s);
  return out;
}

std::vector<PngSpec> every_kind() {
  std::vector<PngSpec> specs;
  for (bool interlaced : {false, true}) {
    for (int depth : {1, 2, 4, 8, 16})
      for (bool trns : {false, true})
        specs.push_back({PNG_COLOR_TYPE_GRAY, depth, trns, interlaced, 0});
    for (int depth : {1, 2, 4, 8})
      for (bool trns : {false, true})
        specs.push_back({PNG_COLOR_TYPE_PALETTE, depth, trns, interlaced, 0});
    for (int depth : {8, 16}) {
      specs.push_back({PNG_COLOR_TYPE_GRAY_ALPHA, depth, false, interlaced, 0});
      specs.push_back({PNG_COLOR_TYPE_RGB, depth, false, interlaced, 0});
      specs.push_back({PNG_COLOR_TYPE_RGB, depth, true, interlaced, 0});
      specs.push_back({PNG_COLOR_TYPE_RGB_ALPHA, depth, false, interlaced, 0});
    }
  }
  return specs;
}

bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

TEST(PngCodec, EveryKindDecodesAsOpenCvDecodesIt) {
  int checked = 0;
  for (const PngSpec& spec : every_kind()) {
    const auto bytes = make_png(spec, 13, 7, static_cast<unsigned>(checked));
    ASSERT_TRUE(is_png(bytes));
    std::string error;
    const cv::Mat unchanged = decode_png(bytes, PngChannels::kUnchanged, &error);
    const cv::Mat expected_unchanged = cv::imdecode(bytes, cv::IMREAD_UNCHANGED);
    ASSERT_FALSE(expected_unchanged.empty()) << describe(spec);
    EXPECT_TRUE(same(unchanged, expected_unchanged))
        << describe(spec) << ": type " << unchanged.type() << " vs OpenCV's "
        << expected_unchanged.type() << " " << error;
    const cv::Mat colour = decode_png(bytes, PngChannels::kColor, &error);
    EXPECT_TRUE(same(colour, cv::imdecode(bytes, cv::IMREAD_COLOR))) << describe(spec);
    ++checked;
  }
  std::cout << "[ png ] " << checked << " kinds: pixels, channels and depth equal to OpenCV's\n";
}

TEST(PngCodec, ReadImageAppliesAnExifOrientationAsOpenCvDoes) {
  testing::TempDir dir("png_exif");
  for (int orientation = 1; orientation <= 8; ++orientation) {
    const PngSpec spec{PNG_COLOR_TYPE_RGB, 8, false, false, orientation};
    const auto bytes = make_png(spec, 5, 3, 7);
    int read = -1;
    std::string error;
    const cv::Mat stored = decode_png(bytes, PngChannels::kUnchanged, &error, &read);
    EXPECT_EQ(read, orientation);
    EXPECT_TRUE(same(stored, cv::imdecode(bytes, cv::IMREAD_UNCHANGED)));  // not turned
    const std::string path = dir.path("turned.png");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    EXPECT_TRUE(same(read_image(path, "BGR"), cv::imdecode(bytes, cv::IMREAD_COLOR)))
        << "orientation " << orientation;
  }
}

TEST(PngCodec, EncodedFilesDecodeToTheSamePixels) {
  std::mt19937 random(3);
  for (int depth : {CV_8U, CV_16U}) {
    for (int channels : {1, 3, 4}) {
      cv::Mat image(9, 11, CV_MAKETYPE(depth, channels));
      cv::randu(image, 0, depth == CV_8U ? 256 : 65536);
      const std::vector<unsigned char> bytes = encode_png(image);
      EXPECT_TRUE(same(cv::imdecode(bytes, cv::IMREAD_UNCHANGED), image))
          << "depth " << depth << ", " << channels << " channels (read by OpenCV)";
      std::vector<unsigned char> by_opencv;
      ASSERT_TRUE(cv::imencode(".png", image, by_opencv));
      std::string error;
      EXPECT_TRUE(same(decode_png(by_opencv, PngChannels::kUnchanged, &error), image))
          << "depth " << depth << ", " << channels << " channels (written by OpenCV)";
    }
  }
  EXPECT_THROW(encode_png(cv::Mat(2, 2, CV_32FC1)), Error);
  EXPECT_THROW(encode_png(cv::Mat(2, 2, CV_8UC2)), Error);
  EXPECT_THROW(encode_png(cv::Mat()), Error);
}

TEST(PngCodec, DamagedFilesAreRefusedWithLibpngsReason) {
  const auto good = make_png({PNG_COLOR_TYPE_RGB, 8, false, false, 0}, 16, 16, 1);
  std::string error;
  auto truncated = good;
  truncated.resize(good.size() / 2);
  EXPECT_TRUE(decode_png(truncated, PngChannels::kColor, &error).empty());
  EXPECT_NE(error.find("ends early"), std::string::npos) << error;
  auto bad_crc = good;
  bad_crc[29] ^= 0xFF;  // inside IHDR's CRC
  EXPECT_TRUE(decode_png(bad_crc, PngChannels::kColor, &error).empty());
  EXPECT_FALSE(error.empty());
  auto bad_data = good;
  for (size_t i = 60; i < bad_data.size() - 20; ++i) bad_data[i] = 0x55;  // IDAT's contents
  EXPECT_TRUE(decode_png(bad_data, PngChannels::kUnchanged, &error).empty());
  EXPECT_FALSE(error.empty());
  std::cout << "[ png ] corrupt image data: " << error << "\n";
  testing::TempDir dir("png_damaged");
  const std::string path = dir.path("bad.png");
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bad_data.data()), bad_data.size());
  try {
    read_image(path, "BGR");
    ADD_FAILURE() << "a damaged PNG was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": not a readable image (PNG: "), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace detkit::data
