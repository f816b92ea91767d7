#pragma once
// Small LVIS files for tests, and the shared tiny LVIS fixture (../shared/fixtures/lvis_eval/:
// coco_tiny val2017 in LVIS v1's format, absent on some machines).
#include <cstdint>
#include <filesystem>
#include <string>

namespace detkit::testing {

/// One LVIS image object; `extra` is inserted as more members (", \"neg_category_ids\": [2]").
inline std::string lvis_image(int64_t id, const std::string& coco_url,
                              const std::string& extra = "", int height = 4, int width = 6) {
  return "{\"id\": " + std::to_string(id) + ", \"coco_url\": \"" + coco_url +
         "\", \"height\": " + std::to_string(height) + ", \"width\": " + std::to_string(width) +
         extra + "}";
}

/// One LVIS annotation with a triangle; `segmentation` replaces it when given.
inline std::string lvis_annotation(int64_t id, int64_t image_id, int64_t category_id,
                                   const std::string& extra = "",
                                   const std::string& segmentation = "[[1, 1, 3, 1, 3, 3]]") {
  return "{\"id\": " + std::to_string(id) + ", \"image_id\": " + std::to_string(image_id) +
         ", \"category_id\": " + std::to_string(category_id) +
         ", \"bbox\": [1, 1, 2, 2], \"area\": 2, \"segmentation\": " + segmentation + extra + "}";
}

/// One LVIS category.
inline std::string lvis_category(int64_t id, const std::string& name, const std::string& frequency,
                                 int64_t image_count, const std::string& synonyms = "") {
  return "{\"id\": " + std::to_string(id) + ", \"name\": \"" + name + "\", \"synonyms\": [" +
         (synonyms.empty() ? "\"" + name + "\"" : synonyms) + "], \"frequency\": \"" + frequency +
         "\", \"image_count\": " + std::to_string(image_count) + ", \"instance_count\": 3}";
}

inline std::string lvis_json(const std::string& images, const std::string& annotations,
                             const std::string& categories) {
  return "{\"info\": {}, \"images\": [" + images + "], \"annotations\": [" + annotations +
         "], \"categories\": [" + categories + "]}";
}

inline std::string lvis_fixture_dir() {
  return std::string(DETKIT_SHARED_DIR) + "/fixtures/lvis_eval/";
}
/// lvis_v1_val_tiny.json; its images are under coco_tiny/ (coco_url names val2017/...).
inline std::string lvis_tiny_json() { return lvis_fixture_dir() + "lvis_v1_val_tiny.json"; }
inline std::string lvis_tiny_image_root() {
  return std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/";
}
inline bool have_lvis_tiny() {
  return std::filesystem::exists(lvis_tiny_json()) &&
         std::filesystem::exists(lvis_fixture_dir() + "expected_s1.json") &&
         std::filesystem::exists(lvis_tiny_image_root() + "val2017");
}

}  // namespace detkit::testing

#define DETKIT_SKIP_WITHOUT_LVIS_TINY()                        \
  if (!detkit::testing::have_lvis_tiny())                      \
  GTEST_SKIP() << "the tiny LVIS fixture is absent: expected " \
               << detkit::testing::lvis_tiny_json() << " and " \
               << detkit::testing::lvis_tiny_image_root() << "val2017"
