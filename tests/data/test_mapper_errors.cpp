// Bad images: each is an error naming the file and the image id.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "detkit/data/dataset_mapper.h"
#include "detkit/data/image/image_io.h"
#include "detkit/utils/error.h"
#include "tests/data/mapper_test_files.h"
#include "tests/support/scoped_env.h"

namespace detkit::data {
namespace {

using testing::coco_annotation;
using testing::coco_image;

// The message of the error mapping image 0 of `dataset` throws.
std::string mapping_error(const CocoDataset& dataset) {
  DatasetMapper mapper{DatasetMapperOptions{}};
  SampleRng rng(0, 0);
  try {
    mapper(dataset, 0, rng);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "mapping did not fail";
  return "";
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(MapperErrors, MissingImageFile) {
  testing::TempDir dir("mapper_missing");
  CocoDataset dataset =
      testing::write_and_load(dir, coco_image(42, "absent.jpg", 8, 8), coco_annotation(1, 42, 1));
  const std::string message = mapping_error(dataset);
  EXPECT_NE(message.find(dir.path("images") + "/absent.jpg"), std::string::npos) << message;
  EXPECT_NE(message.find("not found"), std::string::npos) << message;
  EXPECT_NE(message.find("image id 42"), std::string::npos) << message;
}

TEST(MapperErrors, TruncatedJpeg) {
  testing::TempDir dir("mapper_truncated");
  const std::string path = testing::write_image(dir, "cut.jpg", testing::gradient_image(64, 48));
  const std::string bytes = read_bytes(path);
  ASSERT_GT(bytes.size(), 400u);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  CocoDataset dataset =
      testing::write_and_load(dir, coco_image(7, "cut.jpg", 64, 48), coco_annotation(1, 7, 1));
  const std::string message = mapping_error(dataset);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_NE(message.find("image id 7"), std::string::npos) << message;
}

TEST(MapperErrors, NotAnImage) {
  testing::TempDir dir("mapper_garbage");
  const std::string path = dir.write("images/text.jpg", "this is not a picture");
  CocoDataset dataset =
      testing::write_and_load(dir, coco_image(9, "text.jpg", 8, 8), coco_annotation(1, 9, 1));
  const std::string message = mapping_error(dataset);
  EXPECT_NE(message.find(path + ": not a readable image"), std::string::npos) << message;
  EXPECT_NE(message.find("image id 9"), std::string::npos) << message;
}

// DICOM is refused before OpenCV, whose GDCM reader aborted the process on a malformed one.
TEST(MapperErrors, ADicomFileIsRefusedByName) {
  testing::TempDir dir("mapper_dicom");
  const std::string path =
      dir.write("images/scan.dcm", std::string(128, '\xff') + "DICM" + std::string(1, '\xda'));
  CocoDataset dataset =
      testing::write_and_load(dir, coco_image(9, "scan.dcm", 8, 8), coco_annotation(1, 9, 1));
  const std::string message = mapping_error(dataset);
  EXPECT_NE(message.find(path + ": a DICOM file, which detkit does not read"), std::string::npos)
      << message;
}

// A decompression bomb: a small PNG whose header declares 20000 x 20000 pixels (1.2 GB decoded)
// is refused from its header, before any decoding. The JPEG header is read the same way.
TEST(MapperErrors, AnImageDeclaringTooManyPixelsIsRefusedBeforeDecoding) {
  testing::TempDir dir("mapper_bomb");
  std::vector<unsigned char> png;
  cv::imencode(".png", testing::gradient_image(4, 4), png);
  ASSERT_EQ(std::string(png.begin() + 12, png.begin() + 16), "IHDR");
  for (size_t at : {16u, 20u}) {  // width, height := 20000 (the CRC no longer matches)
    png[at] = 0, png[at + 1] = 0, png[at + 2] = 20000 >> 8, png[at + 3] = 20000 & 0xFF;
  }
  const std::string path = dir.write("images/bomb.png", std::string(png.begin(), png.end()));
  int64_t w = 0, h = 0;
  ASSERT_TRUE(encoded_image_size(png, w, h));
  EXPECT_EQ(w, 20000);
  EXPECT_EQ(h, 20000);
  try {
    read_image(path, "BGR");
    ADD_FAILURE() << "the bomb was decoded";
  } catch (const Error& e) {
    std::cout << "[ bomb ] " << e.what() << "\n";
    EXPECT_EQ(std::string(e.what()),
              path +
                  ": its header declares 20000x20000 (width x height) pixels, over "
                  "the limit of 89478485 (PIL's decompression-bomb threshold); not decoded");
  }
  std::vector<unsigned char> jpeg;
  cv::imencode(".jpg", testing::gradient_image(30, 50), jpeg);
  ASSERT_TRUE(encoded_image_size(jpeg, w, h));
  EXPECT_EQ(w, 50);
  EXPECT_EQ(h, 30);
  EXPECT_FALSE(encoded_image_size({0xFF}, w, h));
}

// Every format encoded_image_size reads, as OpenCV writes it (30 x 50 pixels), and the header
// variants OpenCV does not write but reads: a big-endian TIFF with a LONG height, TIFF sizes as
// signed types, a BigTIFF, an extended (VP8X) WebP, an OS/2 BMP, a bottom-up BMP's negative
// height, PAMs (indented keywords, CR line ends), Netpbm headers with comments or numbers ended
// by any byte (OpenCV's reader skips the byte after a number, whatever it is: a fuzzed PGM
// "1077`777777" declared 1077 x 777777 and OpenCV allocated 2.5 GB for it), a bare JPEG 2000
// codestream with an image offset.
TEST(ImageIo, EncodedImageSizeReadsEveryFormatsHeader) {
  const cv::Mat color = testing::gradient_image(30, 50);
  cv::Mat gray, color_float;
  cv::cvtColor(color, gray, cv::COLOR_BGR2GRAY);
  color.convertTo(color_float, CV_32FC3, 1.0 / 255);
  struct Encoded {
    std::string ext;
    const cv::Mat* image;
    std::vector<int> params;
  };
  const Encoded encodings[] = {{".jpg", &color, {}},
                               {".png", &color, {}},
                               {".bmp", &color, {}},
                               {".ppm", &color, {}},
                               {".pgm", &gray, {}},
                               {".pbm", &gray, {}},
                               {".pam", &color, {}},
                               {".pfm", &color, {}},
                               {".tiff", &color, {}},
                               {".webp", &color, {}},
                               {".webp", &color, {cv::IMWRITE_WEBP_QUALITY, 101}},
                               {".ras", &color, {}},
                               {".hdr", &color_float, {}},
                               {".exr", &color_float, {}}};
  for (const Encoded& e : encodings) {
    std::vector<unsigned char> bytes;
    ASSERT_TRUE(cv::imencode(e.ext, *e.image, bytes, e.params)) << e.ext;
    ASSERT_EQ(cv::imdecode(bytes, cv::IMREAD_COLOR).size(), cv::Size(50, 30)) << e.ext;
    int64_t w = 0, h = 0;
    EXPECT_TRUE(encoded_image_size(bytes, w, h)) << e.ext;
    EXPECT_EQ(w, 50) << e.ext;
    EXPECT_EQ(h, 30) << e.ext;
  }
  std::vector<unsigned char> jp2;  // OpenJPEG's default 6 resolution levels need 32 pixels a side
  ASSERT_TRUE(cv::imencode(".jp2", testing::gradient_image(40, 70), jp2));
  int64_t jp2_w = 0, jp2_h = 0;
  EXPECT_TRUE(encoded_image_size(jp2, jp2_w, jp2_h));
  EXPECT_EQ(jp2_w, 70);
  EXPECT_EQ(jp2_h, 40);
  auto bytes_of = [](std::initializer_list<int> values) {
    return std::vector<unsigned char>(values.begin(), values.end());
  };
  auto text = [](const std::string& s) { return std::vector<unsigned char>(s.begin(), s.end()); };
  const std::pair<std::string, std::vector<unsigned char>> crafted[] = {
      {"TIFF, SLONG width and SSHORT height",
       bytes_of({'I', 'I', '*', 0, 8, 0, 0, 0, 2, 0,     //
                 0,   1,   9,   0, 1, 0, 0, 0, 50, 0, 0, 0,    // width SLONG
                 1,   1,   8,   0, 1, 0, 0, 0, 30, 0, 0, 0})},  // height SSHORT
      {"BigTIFF", bytes_of({'I', 'I', 43, 0, 8, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0,  // IFD at 16
                            2, 0, 0, 0, 0, 0, 0, 0,                                // 2 entries
                            0, 1, 16, 0, 1, 0, 0, 0, 0, 0, 0, 0,                   // LONG8 width
                            50, 0, 0, 0, 0, 0, 0, 0,                               //
                            1, 1, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0,                    // SHORT height
                            30, 0, 0, 0, 0, 0, 0, 0})},
      {"JPEG 2000 codestream", bytes_of({0xFF, 0x4F, 0xFF, 0x51, 0, 41, 0, 0, 0, 0, 0, 60, 0, 0,
                                         0, 40, 0, 0, 0, 10, 0, 0, 0, 10})},  // 60-10 x 40-10
      {"PGM, numbers ended by any byte", text("P5\n50`30I255I")},
      {"PAM, indented, CR line ends", text("P7\r  WIDTH 50\r\n\tHEIGHT \t30  \rENDHDR\n")},
      {"big-endian TIFF", bytes_of({'M', 'M', 0, '*', 0, 0, 0, 8, 0, 2,             //
                                    1,   0,   0, 3,   0, 0, 0, 1, 0, 50, 0, 0,      // width SHORT
                                    1,   1,   0, 4,   0, 0, 0, 1, 0, 0,  0, 30})},  // height LONG
      {"VP8X WebP", bytes_of({'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8',
                              'X', 10,  0,   0,   0, 0, 0, 0, 0,   49,  0,   0,   29,  0,   0})},
      {"OS/2 BMP", bytes_of({'B', 'M', 0, 0, 0, 0,  0, 0,  0, 0, 0, 0,  0,
                             0,   12,  0, 0, 0, 50, 0, 30, 0, 1, 0, 24, 0})},
      {"bottom-up BMP",
       bytes_of({'B', 'M', 0, 0, 0, 0,  0, 0, 0, 0,    0,    0,    0,
                 0,   40,  0, 0, 0, 50, 0, 0, 0, 0xE2, 0xFF, 0xFF, 0xFF})},  // height -30
      {"PAM",
       bytes_of({'P', '7', '\n', 'D', 'E',  'P', 'T', 'H', ' ', '3', '\n', 'W', 'I', 'D', 'T',
                 'H', ' ', '5',  '0', '\n', 'H', 'E', 'I', 'G', 'H', 'T',  ' ', '3', '0', '\n'})},
      {"PPM with a comment", bytes_of({'P', '6', '\n', '#', ' ', '9', '9', '\n', '5', '0', ' ', '3',
                                       '0', '\n', '2', '5', '5', '\n'})}};
  for (const auto& [name, bytes] : crafted) {
    int64_t w = 0, h = 0;
    EXPECT_TRUE(encoded_image_size(bytes, w, h)) << name;
    EXPECT_EQ(w, 50) << name;
    EXPECT_EQ(h, 30) << name;
  }
  int64_t w = 0, h = 0;
  EXPECT_FALSE(encoded_image_size(bytes_of({'P', '6', '\n', 'x'}), w, h));  // no number
  EXPECT_FALSE(encoded_image_size(text("P6x50 30 255\n"), w, h));  // OpenCV: no PPM signature
  EXPECT_FALSE(encoded_image_size(bytes_of({'I', 'I', '*', 0, 0xFF, 0xFF, 0, 0}), w, h));
}

// Decompression bombs in the other formats with a readable header (20000 x 20000 declared, a few
// bytes of data) are refused from the header too, as PIL refuses them, not handed to OpenCV
// (whose own limit, 2^30 pixels, lets a 1.2 GB image through): every format OpenCV decodes but
// DICOM. The PGM is the fuzzer's find (numbers ended by bytes that are not whitespace).
TEST(MapperErrors, BombsOfEveryFormatWithAReadableHeaderAreRefusedBeforeDecoding) {
  testing::TempDir dir("mapper_bombs");
  const std::string data(64, 'x');
  const std::string size_20000_be("\0\0\x4e\x20", 4), size_20000_le("\x20\x4e\0\0", 4);
  const std::pair<std::string, std::string> bombs[] = {
      {"bomb.ppm", "P6\n20000 20000\n255\n" + data},
      {"bomb.pgm", "P5\n20000`20000I255I" + data},
      {"bomb.pam",
       "P7\nWIDTH 20000\nHEIGHT 20000\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n" + data},
      {"bomb.pfm", "PF\n20000 20000\n-1.0\n" + data},
      {"bomb.bmp", std::string("BM") + std::string(12, '\0') + std::string("\x28\0\0\0", 4) +
                       size_20000_le + size_20000_le + data},
      {"bomb.webp", std::string("RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0", 24) +
                        std::string("\x1f\x4e\0\x1f\x4e\0", 6) + data},
      {"bomb.tiff", std::string("II*\0\x08\0\0\0\x02\0", 10) +
                        std::string("\0\x01\x04\0\x01\0\0\0", 8) + size_20000_le +
                        std::string("\x01\x01\x04\0\x01\0\0\0", 8) + size_20000_le + data},
      {"bomb.ras", std::string("\x59\xa6\x6a\x95", 4) + size_20000_be + size_20000_be +
                       std::string("\0\0\0\x18\0\0\0\0\0\0\0\x01", 12) +
                       std::string(8, '\0') + data},
      {"bomb.hdr", "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 20000 +X 20000\n" + data},
      {"bomb.j2k", std::string("\xff\x4f\xff\x51\0\x29\0\0", 8) + size_20000_be + size_20000_be +
                       std::string(8, '\0') + data},
      {"bomb.exr", std::string("\x76\x2f\x31\x01\x02\0\0\0dataWindow\0box2i\0\x10\0\0\0", 29) +
                       std::string(8, '\0') + std::string("\x1f\x4e\0\0\x1f\x4e\0\0\0", 9) +
                       data}};
  for (const auto& [name, bytes] : bombs) {
    const std::string path = dir.write("images/" + name, bytes);
    try {
      read_image(path, "BGR");
      ADD_FAILURE() << name << " was decoded";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                path +
                    ": its header declares 20000x20000 (width x height) pixels, over "
                    "the limit of 89478485 (PIL's decompression-bomb threshold); not decoded")
          << name;
    }
  }
}

// OpenCV refuses some inputs by throwing cv::Exception (here a BMP 2097152 x 1: under detkit's
// pixel limit, over OpenCV's largest side, 2^20): a named error.
TEST(MapperErrors, AnImageOpenCvRefusesIsANamedError) {
  testing::TempDir dir("mapper_opencv_refuses");
  const std::string header = std::string("BM\0\0\0\0\0\0\0\0\x36\0\0\0\x28\0\0\0", 18) +
                             std::string("\0\0\x20\0\x01\0\0\0\x01\0\x18\0", 12) +
                             std::string(24, '\0');
  const std::string path = dir.write("images/wide.bmp", header + std::string(64, 'x'));
  try {
    read_image(path, "BGR");
    ADD_FAILURE() << "decoded";
  } catch (const Error& e) {
    std::cout << "[ opencv ] " << e.what() << "\n";
    EXPECT_EQ(std::string(e.what()).rfind(path + ": not a readable image (OpenCV: ", 0), 0u)
        << e.what();
  }
  // Sides of zero or less are OpenCV's to refuse: a JPEG 2000 codestream whose image offsets
  // exceed its sizes (both sides near -2^32; their product overflowed the bomb check, UBSan).
  const std::string negative = dir.write(
      "images/negative.j2k", std::string("\xff\x4f\xff\x51\0\x29\0\0\0\0\0\x10\0\0\0\x10", 16) +
                                 std::string(8, '\xff') + std::string(64, 'x'));
  try {
    read_image(negative, "BGR");
    ADD_FAILURE() << "decoded";
  } catch (const Error& e) {
    std::cout << "[ negative ] " << e.what() << "\n";
    EXPECT_EQ(std::string(e.what()).rfind(negative + ": not a readable image", 0), 0u) << e.what();
  }
}

// The formats OpenCV decodes only from a file (Sun raster, PFM, Radiance HDR, OpenEXR): OpenCV's
// imdecode writes their bytes to OPENCV_TEMP_PATH (else /tmp) and left the file there when it
// threw after the header; detkit gives them a file of its own in TMPDIR, removed on every path.
// Images over OpenCV's largest side (2097152 x 1) make it throw; nothing is left in either folder,
// and the formats still decode.
TEST(MapperErrors, FormatsOpenCvReadsFromAFileLeaveNoFileBehind) {
  testing::TempDir dir("mapper_opencv_files");
  const std::string opencv_temp = dir.path("opencv_temp"), tmpdir = dir.path("tmpdir");
  std::filesystem::create_directories(opencv_temp);
  std::filesystem::create_directories(tmpdir);
  const testing::ScopedEnv opencv_temp_path("OPENCV_TEMP_PATH", opencv_temp);
  const testing::ScopedEnv tmpdir_env("TMPDIR", tmpdir);
  auto files_left = [&]() {
    size_t n = 0;
    for (const auto& folder : {opencv_temp, tmpdir})
      n += std::distance(std::filesystem::directory_iterator(folder),
                         std::filesystem::directory_iterator());
    return n;
  };
  const std::string data(64, 'x');
  const std::pair<std::string, std::string> wide[] = {
      {"wide.pfm", "PF\n2097152 1\n-1.0\n" + data},
      {"wide.ras", std::string("\x59\xa6\x6a\x95\0\x20\0\0\0\0\0\x01", 12) +
                       std::string("\0\0\0\x18\0\0\0\0\0\0\0\x01", 12) + std::string(8, '\0') +
                       data},
      {"wide.hdr", "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 2097152\n" + data}};
  for (const auto& [name, bytes] : wide) {
    const std::string path = dir.write("images/" + name, bytes);
    try {
      read_image(path, "BGR");
      ADD_FAILURE() << name << " was decoded";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ": not a readable image (OpenCV: ", 0), 0u)
          << e.what();
    }
    EXPECT_EQ(files_left(), 0u) << name;
  }
  cv::Mat color_float;
  testing::gradient_image(30, 50).convertTo(color_float, CV_32FC3, 1.0 / 255);
  for (const std::string ext : {".ras", ".pfm", ".hdr", ".exr"}) {
    std::vector<unsigned char> bytes;
    ASSERT_TRUE(
        cv::imencode(ext, ext == ".ras" ? testing::gradient_image(30, 50) : color_float, bytes))
        << ext;
    const std::string path =
        dir.write("images/good" + ext, std::string(bytes.begin(), bytes.end()));
    const cv::Mat image = read_image(path, "BGR");
    EXPECT_EQ(cv::norm(image, cv::imdecode(bytes, cv::IMREAD_COLOR), cv::NORM_INF), 0.0) << ext;
    EXPECT_EQ(files_left(), 0u) << ext;
  }
}

TEST(MapperErrors, DecodedSizeDiffersFromJson) {
  testing::TempDir dir("mapper_size");
  const std::string path = testing::write_image(dir, "b.png", testing::gradient_image(30, 40));
  CocoDataset dataset =
      testing::write_and_load(dir, coco_image(5, "b.png", 40, 30), coco_annotation(1, 5, 1));
  const std::string message = mapping_error(dataset);
  EXPECT_NE(message.find(path + ": decoded image is 40x30 (width x height) but"), std::string::npos)
      << message;
  EXPECT_NE(message.find("says 30x40"), std::string::npos) << message;
  EXPECT_NE(message.find("image id 5"), std::string::npos) << message;
}

TEST(ImageIo, CompleteJpegAndPngPassTheTruncationCheck) {
  testing::TempDir dir("image_io");
  for (const char* name : {"ok.jpg", "ok.png"}) {
    const std::string path = testing::write_image(dir, name, testing::gradient_image(20, 30));
    const std::string bytes = read_bytes(path);
    EXPECT_EQ(truncation_problem({bytes.begin(), bytes.end()}), "") << name;
    EXPECT_NE(truncation_problem({bytes.begin(), bytes.end() - 3}), "") << name;
    EXPECT_EQ(read_image(path, "BGR").size(), cv::Size(30, 20));
  }
}

}  // namespace
}  // namespace detkit::data
