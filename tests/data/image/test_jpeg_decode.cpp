// The TurboJPEG path of read_image: the same pixels as OpenCV's decoder on every real coco_tiny
// JPEG, and EXIF orientation read and applied as OpenCV applies it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "detkit/data/image/image_io.h"
#include "detkit/data/image/jpeg_decode.h"
#include "tests/data/coco_test_files.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

double max_diff(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return -1;
  return cv::norm(a, b, cv::NORM_INF);
}

// A small colour JPEG (no EXIF) made by OpenCV.
std::vector<unsigned char> plain_jpeg(int channels = 3) {
  cv::Mat image(24, 40, channels == 3 ? CV_8UC3 : CV_8UC1);
  cv::randu(image, 0, 255);
  std::vector<unsigned char> bytes;
  cv::imencode(".jpg", image, bytes);
  return bytes;
}

// `jpeg` with an APP1 EXIF segment holding one orientation tag inserted after SOI.
std::vector<unsigned char> with_exif(std::vector<unsigned char> jpeg, uint16_t orientation,
                                     bool big_endian) {
  std::vector<unsigned char> segment = {0xFF, 0xE1, 0, 0, 'E', 'x', 'i', 'f', 0, 0};
  auto u16 = [&](uint32_t v) {
    const unsigned char hi = (v >> 8) & 0xFF, lo = v & 0xFF;
    segment.insert(segment.end(), {big_endian ? hi : lo, big_endian ? lo : hi});
  };
  auto u32 = [&](uint32_t v) {
    u16(big_endian ? v >> 16 : v & 0xFFFF);
    u16(big_endian ? v & 0xFFFF : v >> 16);
  };
  segment.insert(segment.end(), 2, big_endian ? 'M' : 'I');  // TIFF byte order
  u16(42);                                                   // TIFF magic
  u32(8);                                                    // offset of IFD0
  u16(1);                                                    // IFD0 holds one entry:
  u16(0x0112);                                               //   Orientation
  u16(3);                                                    //   SHORT
  u32(1);                                                    //   one value
  u16(orientation);                                          //   in the value field
  u16(0);
  u32(0);  // no next IFD
  const size_t length = segment.size() - 2;
  segment[2] = static_cast<unsigned char>(length >> 8);
  segment[3] = static_cast<unsigned char>(length & 0xFF);
  jpeg.insert(jpeg.begin() + 2, segment.begin(), segment.end());
  return jpeg;
}

TEST(JpegDecode, SamePixelsAsOpenCvOnEveryCocoTinyImage) {
  if (!testing::have_coco_tiny()) GTEST_SKIP() << "../shared/data/coco_tiny is absent";
  int decoded = 0;
  for (const char* split : {"train2017", "val2017"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(testing::coco_tiny_images(split))) {
      const auto bytes = read_bytes(entry.path().string());
      ASSERT_EQ(jpeg_exif_orientation(bytes), 1) << entry.path();
      const cv::Mat bgr = decode_jpeg(bytes, /*rgb=*/false);
      const cv::Mat opencv = cv::imdecode(bytes, cv::IMREAD_COLOR);
      ASSERT_EQ(max_diff(bgr, opencv), 0.0) << entry.path();
      cv::Mat opencv_rgb;
      cv::cvtColor(opencv, opencv_rgb, cv::COLOR_BGR2RGB);
      ASSERT_EQ(max_diff(decode_jpeg(bytes, /*rgb=*/true), opencv_rgb), 0.0) << entry.path();
      ++decoded;
    }
  }
  std::cout << decoded << " coco_tiny JPEGs: TurboJPEG and OpenCV max abs diff 0\n";
  EXPECT_EQ(decoded, 160);
}

TEST(JpegDecode, GreyJpegBecomesThreeEqualChannels) {
  const auto bytes = plain_jpeg(/*channels=*/1);
  const cv::Mat image = decode_jpeg(bytes, false);
  EXPECT_EQ(image.channels(), 3);
  EXPECT_EQ(max_diff(image, cv::imdecode(bytes, cv::IMREAD_COLOR)), 0.0);
}

TEST(JpegDecode, ReadsExifOrientation) {
  const auto plain = plain_jpeg();
  EXPECT_EQ(jpeg_exif_orientation(plain), 1);
  EXPECT_EQ(jpeg_exif_orientation(with_exif(plain, 6, /*big_endian=*/false)), 6);
  EXPECT_EQ(jpeg_exif_orientation(with_exif(plain, 8, /*big_endian=*/true)), 8);
  EXPECT_EQ(jpeg_exif_orientation(with_exif(plain, 1, false)), 1);
  EXPECT_EQ(jpeg_exif_orientation(with_exif(plain, 9, false)), 0);  // not a valid orientation
  auto other_app1 = with_exif(plain, 6, false);
  other_app1[6] = 'X';  // "Xxif": an APP1 that is not EXIF (XMP, say) is skipped
  EXPECT_EQ(jpeg_exif_orientation(other_app1), 1);
  auto broken = with_exif(plain, 6, false);
  broken[12] = 'X';  // byte order mark "XI": unreadable EXIF
  EXPECT_EQ(jpeg_exif_orientation(broken), 0);
  EXPECT_EQ(jpeg_exif_orientation({0xFF, 0xD8, 0xFF, 0xE1, 0x40}), 0);  // segment past the end
  EXPECT_TRUE(decode_jpeg({0xFF, 0xD8, 0xFF, 0xD9}, false).empty());
}

TEST(JpegDecode, EveryExifOrientationIsAppliedAsOpenCvDoes) {
  // TurboJPEG's pixels turned by apply_exif_orientation, against OpenCV's imdecode (libjpeg and
  // its own EXIF transform) on the same file, for the eight orientations.
  testing::TempDir dir("jpeg_exif");
  const auto plain = plain_jpeg();
  for (int orientation = 1; orientation <= 8; ++orientation) {
    const auto rotated = with_exif(plain, static_cast<uint16_t>(orientation), orientation % 2);
    const std::string path = dir.path("rotated.jpg");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(rotated.data()), rotated.size());
    const cv::Mat image = read_image(path, "BGR");
    EXPECT_EQ(image.rows, orientation >= 5 ? 40 : 24) << "orientation " << orientation;
    EXPECT_EQ(max_diff(image, cv::imdecode(rotated, cv::IMREAD_COLOR)), 0.0)
        << "orientation " << orientation;
    cv::Mat rgb;
    cv::cvtColor(image, rgb, cv::COLOR_BGR2RGB);
    EXPECT_EQ(max_diff(read_image(path, "RGB"), rgb), 0.0) << "orientation " << orientation;
  }
}

}  // namespace
}  // namespace detkit::data
