#pragma once
// A COCO instances JSON shaped like MS-COCO's instances_train2017.json (about 450 MB): the same
// key order and separators, 118,287 images and 860,001 annotations at scale 1, polygons of about
// 20 points with two-decimal coordinates, about 1% crowd regions stored as uncompressed RLE,
// annotations in an order unrelated to their images. The content is random but valid: every
// annotation names an existing image and category, and every RLE sums to the image size.
#include <cstdint>
#include <string>

namespace detkit::bench {

struct SyntheticCocoOptions {
  double scale = 1.0;  // multiplies the image and annotation counts (0.1: a quick run)
  uint64_t seed = 2017;
};

struct SyntheticCocoSummary {
  int64_t images = 0;
  int64_t annotations = 0;
  int64_t crowd = 0;
  int64_t polygons = 0;
  uint64_t bytes = 0;
};

/// Writes the JSON to `path` (replacing it); throws detkit::Error when it cannot.
SyntheticCocoSummary write_synthetic_coco(const std::string& path,
                                          const SyntheticCocoOptions& options);

}  // namespace detkit::bench
