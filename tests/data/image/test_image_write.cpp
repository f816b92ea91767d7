// Writing images without linking OpenCV's imgcodecs: JPEG by TurboJPEG with OpenCV's settings
// (the same file cv::imencode writes), PNG by libpng, other formats through imgcodecs loaded at
// run time; files written whole or not at all, errors naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>

#include "detkit/data/image/image_write.h"
#include "detkit/data/image/jpeg_encode.h"
#include "detkit/data/image/opencv_codecs.h"
#include "detkit/utils/error.h"
#include "tests/support/temp_dir.h"

namespace detkit::data {
namespace {

cv::Mat gradient(int rows, int cols, int channels) {
  cv::Mat image(rows, cols, CV_8UC(channels));
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols * channels; ++x)
      image.ptr<uchar>(y)[x] = static_cast<uchar>((x * 7 + y * 3 + (x * y) % 11) & 0xFF);
  return image;
}

double max_diff(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return -1;
  return cv::norm(a, b, cv::NORM_INF);
}

TEST(ImageWrite, JpegIsTheFileOpenCvWrites) {
  for (int channels : {3, 1}) {
    for (int quality : {kDefaultJpegQuality, 92, 50}) {
      const cv::Mat image = gradient(37, 53, channels);
      std::vector<unsigned char> by_opencv;
      ASSERT_TRUE(cv::imencode(".jpg", image, by_opencv, {cv::IMWRITE_JPEG_QUALITY, quality}));
      const std::vector<unsigned char> ours = encode_jpeg(image, quality);
      const double diff = max_diff(cv::imdecode(ours, cv::IMREAD_UNCHANGED),
                                   cv::imdecode(by_opencv, cv::IMREAD_UNCHANGED));
      std::cout << "[ jpeg ] " << channels << " channel(s), quality " << quality << ": "
                << (ours == by_opencv ? "the same bytes" : "different bytes")
                << ", decoded pixels differ by at most " << diff << "\n";
      EXPECT_EQ(diff, 0.0);
    }
  }
  EXPECT_THROW(encode_jpeg(gradient(4, 4, 3), 0), Error);
  EXPECT_THROW(encode_jpeg(cv::Mat(4, 4, CV_16UC3)), Error);
}

TEST(ImageWrite, EachExtensionItsFormat) {
  testing::TempDir dir("image_write");
  const cv::Mat image = gradient(20, 30, 3);
  write_image(dir.path("a.png"), image);
  EXPECT_EQ(max_diff(cv::imread(dir.path("a.png"), cv::IMREAD_UNCHANGED), image), 0.0);
  write_image(dir.path("a.JPG"), image);
  EXPECT_EQ(cv::imread(dir.path("a.JPG")).size(), image.size());
  // WebP through OpenCV's imgcodecs, loaded at run time (lossless at OpenCV's default quality).
  write_image(dir.path("a.webp"), image);
  EXPECT_EQ(max_diff(cv::imread(dir.path("a.webp"), cv::IMREAD_UNCHANGED), image), 0.0);
  for (const std::string name : {"a.unknown", "no_extension"}) {
    try {
      write_image(dir.path(name), image);
      ADD_FAILURE() << name << " was written";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(dir.path(name)), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir.path(name)));
  }
  try {
    write_image(dir.path("missing_folder/a.png"), image);
    ADD_FAILURE() << "written into a missing folder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing_folder/a.png"), std::string::npos) << e.what();
  }
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path("")))
    left.push_back(entry.path().filename().string());
  EXPECT_EQ(left.size(), 3u) << "only a.png, a.JPG and a.webp, no temporary files";
}

TEST(ImageWrite, TheRunTimeImgcodecsIsTheOneDetkitWasBuiltWith) {
  EXPECT_EQ(opencv_imgcodecs_library(),
            "libopencv_imgcodecs.so." + std::to_string(CV_VERSION_MAJOR * 100 + CV_VERSION_MINOR));
  std::vector<unsigned char> bmp;
  ASSERT_TRUE(opencv_imencode(".bmp", gradient(3, 4, 3), &bmp, "test.bmp"));
  EXPECT_EQ(max_diff(opencv_imdecode(bmp, cv::IMREAD_COLOR, "test.bmp"), gradient(3, 4, 3)), 0.0);
}

}  // namespace
}  // namespace detkit::data
