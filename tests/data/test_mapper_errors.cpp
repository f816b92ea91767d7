// Bad images: each is an error naming the file and the image id.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <opencv2/imgcodecs.hpp>

#include "detkit/data/dataset_mapper.h"
#include "detkit/data/image/image_io.h"
#include "detkit/utils/error.h"
#include "tests/data/mapper_test_files.h"

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

// OpenCV refuses some inputs by throwing cv::Exception (here a PPM declaring 40000 x 40000
// pixels, over OpenCV's own limit; a format whose header detkit does not read): a named error too.
TEST(MapperErrors, AnImageOpenCvRefusesIsANamedError) {
  testing::TempDir dir("mapper_opencv_refuses");
  const std::string path =
      dir.write("images/huge.ppm", "P6\n40000 40000\n255\n" + std::string(64, 'x'));
  try {
    read_image(path, "BGR");
    ADD_FAILURE() << "decoded";
  } catch (const Error& e) {
    std::cout << "[ opencv ] " << e.what() << "\n";
    EXPECT_EQ(std::string(e.what()).rfind(path + ": not a readable image (OpenCV: ", 0), 0u)
        << e.what();
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
