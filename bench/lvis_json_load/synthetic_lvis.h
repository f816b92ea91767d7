#pragma once
// An LVIS annotation JSON shaped like lvis_v1_train.json (about 1.1 GB): 100,170 images with
// coco_url, neg_category_ids and not_exhaustive_category_ids, 1,270,141 annotations whose
// polygons have 20 to 70 points with two-decimal coordinates, 1,203 categories with LVIS's fields
// (synonyms, def, synset, frequency, image_count, instance_count), annotations in an order
// unrelated to their images. Random but valid for load_lvis_json: every annotation names an
// existing image and a category id in 1..1203, every polygon has at least 3 points.
#include <cstdint>
#include <string>

namespace detkit::bench {

struct SyntheticLvisOptions {
  double scale = 1.0;  // multiplies the image and annotation counts (0.1: a quick run)
  uint64_t seed = 2020;
};

struct SyntheticLvisSummary {
  int64_t images = 0;
  int64_t annotations = 0;
  int64_t polygons = 0;
  int64_t negative_ids = 0;        // (image, category) pairs in neg_category_ids
  int64_t not_exhaustive_ids = 0;  // and in not_exhaustive_category_ids
  uint64_t bytes = 0;
};

/// Writes the JSON to `path` (replacing it); throws detkit::Error when it cannot.
SyntheticLvisSummary write_synthetic_lvis(const std::string& path,
                                          const SyntheticLvisOptions& options);

}  // namespace detkit::bench
