#pragma once
// Small image datasets on disk for the mapper and loader tests: images written with OpenCV, a
// COCO instances JSON next to them, loaded back as a CocoDataset.
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "detkit/data/coco/coco.h"
#include "tests/data/coco_test_files.h"
#include "tests/support/temp_dir.h"

namespace detkit::testing {

/// A (height, width) BGR image whose pixel (y, x) is (x % 256, y % 256, (x + y) % 256) + `shift`.
inline cv::Mat gradient_image(int height, int width, int shift = 0) {
  cv::Mat image(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      image.at<cv::Vec3b>(y, x) =
          cv::Vec3b(static_cast<uchar>((x + shift) % 256), static_cast<uchar>((y + shift) % 256),
                    static_cast<uchar>((x + y + shift) % 256));
    }
  }
  return image;
}

/// Writes `image` as dir/images/<file_name> and returns the full path.
inline std::string write_image(const TempDir& dir, const std::string& file_name,
                               const cv::Mat& image) {
  const std::string path = dir.write("images/" + file_name, "");
  cv::imwrite(path, image);
  return path;
}

/// Writes dir/ann.json and loads it with images under dir/images.
inline data::CocoDataset write_and_load(const TempDir& dir, const std::string& images,
                                        const std::string& annotations,
                                        const std::string& categories = kTwoCategories) {
  const std::string json = dir.write("ann.json", coco_json(images, annotations, categories));
  return data::load_coco_json(json, dir.path("images"));
}

}  // namespace detkit::testing
