// The tiny LVIS fixture loaded by detkit against the records Detectron2's load_lvis_json makes
// (tests/parity/oracle_lvis.py, which transcribes it over lvis-api's index): record by record,
// the image ids, file names, sizes, neg / not-exhaustive category ids, and each annotation's
// box, class and polygons.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "detkit/data/coco/lvis.h"
#include "tests/data/lvis_test_files.h"
#include "tests/parity/oracle.h"

namespace detkit::data {
namespace {

at::Tensor bytes_of(const std::string& s) {
  return at::tensor(std::vector<uint8_t>(s.begin(), s.end()), at::kByte);
}

std::vector<std::string> lines_of(const at::Tensor& bytes) {
  const uint8_t* p = bytes.data_ptr<uint8_t>();
  std::string text(p, p + bytes.numel());
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(text.substr(start, end - start));
  lines.push_back(text.substr(start));
  return lines;
}

TEST(LvisParity, RecordsEqualDetectron2LoadLvisJson) {
  DETKIT_SKIP_WITHOUT_LVIS_TINY();
  DETKIT_REQUIRE_ORACLE();
  const std::string root = testing::lvis_tiny_image_root();  // ends in '/', as Detectron2's roots
  const testing::TensorMap want = testing::run_oracle(
      "oracle_lvis.py", "load",
      {{"json", bytes_of(testing::lvis_tiny_json())}, {"image_root", bytes_of(root)}});
  const CocoDataset ds = load_lvis_json(testing::lvis_tiny_json(), root);

  const auto image_ids = want.at("image_ids").contiguous();
  const size_t n = static_cast<size_t>(image_ids.numel());
  ASSERT_EQ(ds.num_images(), n);
  const std::vector<std::string> file_names = lines_of(want.at("file_names"));
  ASSERT_EQ(file_names.size(), n);
  const auto heights = want.at("heights").accessor<int64_t, 1>();
  const auto widths = want.at("widths").accessor<int64_t, 1>();
  const auto neg_sizes = want.at("neg_sizes").accessor<int64_t, 1>();
  const auto nex_sizes = want.at("not_exhaustive_sizes").accessor<int64_t, 1>();
  const auto neg_ids = want.at("neg_ids").accessor<int64_t, 1>();
  const auto nex_ids = want.at("not_exhaustive_ids").accessor<int64_t, 1>();
  int64_t neg_at = 0, nex_at = 0;
  for (size_t i = 0; i < n; ++i) {
    SCOPED_TRACE("record " + std::to_string(i));
    const ImageView image = ds.image(i);
    EXPECT_EQ(image.id, image_ids[i].item<int64_t>());
    EXPECT_EQ(ds.image_path(i), file_names[i]);
    EXPECT_EQ(image.height, heights[i]);
    EXPECT_EQ(image.width, widths[i]);
    const IdSpan neg = ds.neg_category_ids(i), nex = ds.not_exhaustive_category_ids(i);
    ASSERT_EQ(static_cast<int64_t>(neg.size), neg_sizes[i]);
    ASSERT_EQ(static_cast<int64_t>(nex.size), nex_sizes[i]);
    for (size_t k = 0; k < neg.size; ++k) EXPECT_EQ(neg[k], neg_ids[neg_at++]);
    for (size_t k = 0; k < nex.size; ++k) EXPECT_EQ(nex[k], nex_ids[nex_at++]);
  }

  const auto ann_image = want.at("ann_image").accessor<int64_t, 1>();
  const auto ann_class = want.at("ann_class").accessor<int64_t, 1>();
  const auto ann_bbox = want.at("ann_bbox").accessor<double, 2>();
  const auto ann_polys = want.at("ann_num_polygons").accessor<int64_t, 1>();
  const auto poly_sizes = want.at("polygon_sizes").accessor<int64_t, 1>();
  const auto coords = want.at("coords").accessor<double, 1>();
  const int64_t num_annotations = want.at("ann_image").numel();
  ASSERT_EQ(static_cast<int64_t>(ds.num_annotations()), num_annotations);
  double max_box_diff = 0, max_coord_diff = 0;
  int64_t polygon = 0, coord = 0, class_differences = 0;
  for (int64_t a = 0; a < num_annotations; ++a) {
    const AnnotationView view = ds.annotation(static_cast<size_t>(a));
    SCOPED_TRACE("annotation " + std::to_string(a) + " (id " + std::to_string(view.id()) + ")");
    EXPECT_EQ(static_cast<int64_t>(view.image_index()), ann_image[a]);
    class_differences += view.class_index() != ann_class[a];
    EXPECT_FALSE(view.iscrowd());
    const auto box = view.bbox();
    for (int k = 0; k < 4; ++k)
      max_box_diff = std::max(max_box_diff, std::abs(box[k] - ann_bbox[a][k]));
    ASSERT_EQ(static_cast<int64_t>(view.num_polygons()), ann_polys[a]);
    for (size_t p = 0; p < view.num_polygons(); ++p, ++polygon) {
      const CoordSpan xy = view.polygon(p);
      ASSERT_EQ(static_cast<int64_t>(xy.size), poly_sizes[polygon]);
      for (double x : xy) max_coord_diff = std::max(max_coord_diff, std::abs(x - coords[coord++]));
    }
  }
  std::cout << "[ lvis parity ] " << n << " records, " << num_annotations << " annotations, "
            << polygon << " polygons, " << neg_at << " negative and " << nex_at
            << " not-exhaustive ids: classes differing " << class_differences
            << ", largest box difference " << max_box_diff << ", largest polygon coordinate "
            << "difference " << max_coord_diff << "\n";
  EXPECT_EQ(class_differences, 0);
  EXPECT_EQ(max_box_diff, 0.0);  // both parse the file's decimals to the nearest double
  EXPECT_EQ(max_coord_diff, 0.0);
  EXPECT_EQ(neg_at, want.at("neg_ids").numel());
  EXPECT_EQ(nex_at, want.at("not_exhaustive_ids").numel());
}

}  // namespace
}  // namespace detkit::data
