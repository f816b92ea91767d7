#pragma once
// Small COCO instances files for tests: JSON text from its three arrays, and the real coco_tiny
// files in ../shared (absent on some machines).
#include <filesystem>
#include <string>

namespace detkit::testing {

/// {"images": [...], "annotations": [...], "categories": [...]} from the arrays' contents.
inline std::string coco_json(const std::string& images, const std::string& annotations,
                             const std::string& categories) {
  return "{\"images\": [" + images + "], \"annotations\": [" + annotations +
         "], \"categories\": [" + categories + "]}";
}

/// One image object.
inline std::string coco_image(int64_t id, const std::string& file_name, int height = 4,
                              int width = 6) {
  return "{\"id\": " + std::to_string(id) + ", \"file_name\": \"" + file_name +
         "\", \"height\": " + std::to_string(height) + ", \"width\": " + std::to_string(width) +
         "}";
}

/// One annotation object; `extra` is inserted as more members (", \"iscrowd\": 1").
inline std::string coco_annotation(int64_t id, int64_t image_id, int64_t category_id,
                                   const std::string& extra = "",
                                   const std::string& bbox = "[1, 1, 2, 2]") {
  return "{\"id\": " + std::to_string(id) + ", \"image_id\": " + std::to_string(image_id) +
         ", \"category_id\": " + std::to_string(category_id) + ", \"bbox\": " + bbox + extra + "}";
}

inline const char* kTwoCategories =
    "{\"id\": 3, \"name\": \"car\"}, {\"id\": 1, \"name\": \"person\"}";

/// ../shared/data/coco_tiny/annotations/instances_<split>.json.
inline std::string coco_tiny_json(const std::string& split) {
  return std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/annotations/instances_" + split +
         ".json";
}
inline std::string coco_tiny_images(const std::string& split) {
  return std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/" + split;
}
inline bool have_coco_tiny() {
  return std::filesystem::exists(coco_tiny_json("train2017")) &&
         std::filesystem::exists(coco_tiny_json("val2017"));
}

}  // namespace detkit::testing

#define DETKIT_SKIP_WITHOUT_COCO_TINY()                                                          \
  if (!detkit::testing::have_coco_tiny())                                                        \
  GTEST_SKIP() << "coco_tiny is absent: expected " << detkit::testing::coco_tiny_json("val2017") \
               << " (the shared test data, ../shared/data/coco_tiny)"
