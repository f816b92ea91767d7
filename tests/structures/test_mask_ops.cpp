// COCO RLE mask operations: hand-made masks with known runs, and exactness against pycocotools'
// numbers for every annotation of coco_tiny (fixtures under ../shared/fixtures/coco_masks).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <nlohmann/json.hpp>

#include "detkit/structures/mask_ops.h"
#include "detkit/utils/error.h"

namespace detkit::mask_ops {
namespace {

using Counts = std::vector<uint32_t>;
using Box = std::array<double, 4>;

// Row-major mask from rows of '0'/'1' characters.
std::vector<uint8_t> mask_from_rows(const std::vector<std::string>& rows) {
  std::vector<uint8_t> mask;
  for (const auto& row : rows) {
    for (char c : row) mask.push_back(c == '1' ? 1 : 0);
  }
  return mask;
}

// Checks that running `fn` throws detkit::Error whose message contains `detail`.
void expect_error(const std::function<void()>& fn, const std::string& detail) {
  try {
    fn();
    ADD_FAILURE() << "expected detkit::Error containing \"" << detail << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(detail), std::string::npos)
        << "message \"" << e.what() << "\" lacks \"" << detail << "\"";
  }
}

// Encodes, checks runs, area and box, and that decoding gives the mask back.
void check_mask(const std::vector<std::string>& rows, const Counts& counts, uint64_t expected_area,
                const Box& box) {
  const int64_t h = static_cast<int64_t>(rows.size()), w = static_cast<int64_t>(rows[0].size());
  const auto mask = mask_from_rows(rows);
  const RLE rle = encode(mask.data(), h, w);
  EXPECT_EQ(rle.h, h);
  EXPECT_EQ(rle.w, w);
  EXPECT_EQ(rle.counts, counts);
  EXPECT_EQ(decode(rle), mask);
  EXPECT_EQ(area(rle), expected_area);
  EXPECT_EQ(to_bbox(rle), box);
  const RLE back = from_string(to_string(rle), h, w);
  EXPECT_EQ(back.counts, counts);
}

TEST(MaskOps, EncodeDecodeHandMadeMasks) {
  // Column-major: col 0 = 001, col 1 = 111, col 2 = 100, col 3 = 000.
  check_mask({"0110", "0100", "1100"}, {2, 5, 5}, 5, {0, 0, 3, 3});
  check_mask({"000", "000"}, {6}, 0, {0, 0, 0, 0});                  // empty
  check_mask({"111", "111"}, {0, 6}, 6, {0, 0, 3, 2});               // full
  check_mask({"0000", "0010", "0000"}, {7, 1, 4}, 1, {2, 1, 1, 1});  // one pixel (y 1, x 2)
  check_mask({"10", "00"}, {0, 1, 3}, 1, {0, 0, 1, 1});              // first pixel on
  check_mask({"01", "00"}, {2, 1, 1}, 1, {1, 0, 1, 1});
  // The run from (y 2, x 0) to (y 0, x 1) spans two columns: pycocotools takes all rows.
  check_mask({"01", "00", "10"}, {2, 2, 2}, 2, {0, 0, 2, 3});
}

TEST(MaskOps, NonzeroBytesAreOn) {
  const std::vector<uint8_t> mask = {0, 255, 7, 0};  // 2x2 row-major
  const RLE rle = encode(mask.data(), 2, 2);
  EXPECT_EQ(rle.counts, (Counts{1, 2, 1}));
  EXPECT_EQ(decode(rle), (std::vector<uint8_t>{0, 1, 1, 0}));
}

TEST(MaskOps, ZeroSizedMasks) {
  for (auto [h, w] : {std::pair<int64_t, int64_t>{0, 5}, {5, 0}, {0, 0}}) {
    const RLE rle = encode(nullptr, h, w);
    EXPECT_EQ(rle.counts, Counts{0});  // pycocotools' rleEncode gives one empty run
    EXPECT_TRUE(decode(rle).empty());
    EXPECT_EQ(area(rle), 0u);
    EXPECT_EQ(to_bbox(rle), (Box{0, 0, 0, 0}));
    EXPECT_EQ(to_string(rle), "0");
    EXPECT_EQ(from_string("0", h, w).counts, Counts{0});
    EXPECT_EQ(from_polygon({0, 0, 3, 0, 3, 3}, h, w).counts, Counts{0});
  }
}

TEST(MaskOps, CompressedStringByHand) {
  // 100 -> 'T' (4 | more) '3'; 3 -> '3'; 50 -> 'b' (18 | more) '1'; the fourth count is stored
  // as 1 - 3 = -2 -> 'N' (30, sign bit set).
  const RLE rle{11, 14, {100, 3, 50, 1}};
  EXPECT_EQ(to_string(rle), "T33b1N");
  EXPECT_EQ(from_string("T33b1N", 11, 14).counts, rle.counts);
  EXPECT_EQ(to_string(RLE{3, 4, {2, 5, 5}}), "255");
  // Large runs and differences of both signs round-trip.
  const RLE big{1000, 1000, {0, 999999, 1}};
  EXPECT_EQ(from_string(to_string(big), 1000, 1000).counts, big.counts);
  const RLE mixed{100, 100, {5000, 17, 3, 4000, 900, 2, 30, 1, 40, 7}};
  EXPECT_EQ(from_string(to_string(mixed), 100, 100).counts, mixed.counts);
}

TEST(MaskOps, KnownCocoStringDecodesAndReencodes) {
  // val2017 annotation 1347500: pycocotools gives area 73 and box [448, 294, 12, 8].
  const std::string counts = "Vej57S=0000000000000100N2O2MnbZ2";
  const RLE rle = from_string(counts, 426, 640);
  EXPECT_EQ(area(rle), 73u);
  EXPECT_EQ(to_bbox(rle), (Box{448, 294, 12, 8}));
  const auto mask = decode(rle);
  uint64_t on = 0, inside = 0;  // "on" pixels, and those within rows 294..301, columns 448..459
  for (int64_t y = 0; y < 426; ++y) {
    for (int64_t x = 0; x < 640; ++x) {
      on += mask[y * 640 + x];
      if (y >= 294 && y < 302 && x >= 448 && x < 460) inside += mask[y * 640 + x];
    }
  }
  EXPECT_EQ(on, 73u);
  EXPECT_EQ(inside, 73u);
  EXPECT_EQ(to_string(encode(mask.data(), 426, 640)), counts);
}

TEST(MaskOps, PolygonsAndBoxes) {
  // The 2x2 square at the origin covers pixels x, y in {0, 1}: columns 0 and 1, rows 0 and 1.
  const Counts square = {0, 2, 2, 2, 10};
  EXPECT_EQ(from_polygon({0, 0, 2, 0, 2, 2, 0, 2}, 4, 4).counts, square);
  EXPECT_EQ(from_polygon({0, 0, 0, 2, 2, 2, 2, 0}, 4, 4).counts, square);
  EXPECT_EQ(from_bbox({0, 0, 2, 2}, 4, 4).counts, square);
  // A polygon larger than the image fills it.
  EXPECT_EQ(from_polygon({-1, -1, 5, -1, 5, 5, -1, 5}, 4, 4).counts, (Counts{0, 16}));
  // Coincident vertices and a polygon collapsed to one point.
  EXPECT_EQ(from_polygon({0, 0, 0, 0, 2, 0, 2, 2, 0, 2}, 4, 4).counts, square);
  EXPECT_EQ(from_polygon({1, 1, 1, 1, 1, 1}, 4, 4).counts, Counts{16});
  // Two squares side by side: their union, and the union of one with itself.
  const RLE left = from_polygon({0, 0, 2, 0, 2, 2, 0, 2}, 4, 4);
  const RLE both = from_polygons({{0, 0, 2, 0, 2, 2, 0, 2}, {2, 0, 4, 0, 4, 2, 2, 2}}, 4, 4);
  EXPECT_EQ(both.counts, (Counts{0, 2, 2, 2, 2, 2, 2, 2, 2}));
  EXPECT_EQ(area(both), 8u);
  EXPECT_EQ(to_bbox(both), (Box{0, 0, 4, 2}));
  EXPECT_EQ(from_polygons({{0, 0, 2, 0, 2, 2, 0, 2}}, 4, 4).counts, left.counts);
}

TEST(MaskOps, MergeUnionAndIntersection) {
  const RLE left{4, 4, {0, 8, 8}};                    // columns 0 and 1
  const RLE top{4, 4, {0, 2, 2, 2, 2, 2, 2, 2, 2}};  // rows 0 and 1
  EXPECT_EQ(merge({left, top}).counts, (Counts{0, 10, 2, 2, 2}));
  EXPECT_EQ(merge({left, top}, true).counts, (Counts{0, 2, 2, 2, 10}));
  EXPECT_EQ(merge({left}).counts, left.counts);
  const RLE none = merge({});
  EXPECT_EQ(none.h, 0);
  EXPECT_EQ(none.w, 0);
  EXPECT_TRUE(none.counts.empty());
  EXPECT_EQ(to_string(none), "");
  const RLE empty{4, 4, {16}};
  EXPECT_EQ(merge({left, empty}).counts, left.counts);
  EXPECT_EQ(merge({left, empty}, true).counts, Counts{16});
  // Three at once: union of left, top and the bottom-right pixel.
  const RLE corner{4, 4, {15, 1}};
  EXPECT_EQ(merge({left, top, corner}).counts, (Counts{0, 10, 2, 2, 1, 1}));
}

TEST(MaskOps, MaskIou) {
  const RLE left{4, 4, {0, 8, 8}};                    // area 8
  const RLE top{4, 4, {0, 2, 2, 2, 2, 2, 2, 2, 2}};  // area 8, 4 shared with left
  const RLE right{4, 4, {8, 8}};                      // disjoint from left
  const RLE empty{4, 4, {16}};
  const RLE pixel{4, 4, {0, 1, 15}};  // top-left pixel, inside left and top
  const auto o = iou({left, pixel, empty}, {top, right, left}, {false, false, false});
  ASSERT_EQ(o.size(), 9u);
  const std::vector<double> expected = {4.0 / 12, 0, 1,     // left vs top, right, left
                                        1.0 / 8,  0, 1.0 / 8,  // pixel
                                        0,        0, 0};       // empty
  for (size_t i = 0; i < 9; ++i) EXPECT_DOUBLE_EQ(o[i], expected[i]) << "entry " << i;
  // Crowd ground truth: the union is the detection's area.
  const auto crowd = iou({left, pixel, right}, {top}, {true});
  ASSERT_EQ(crowd.size(), 3u);
  EXPECT_DOUBLE_EQ(crowd[0], 4.0 / 8);
  EXPECT_DOUBLE_EQ(crowd[1], 1.0);
  EXPECT_DOUBLE_EQ(crowd[2], 4.0 / 8);
  EXPECT_TRUE(iou({}, {top}, {false}).empty());
  EXPECT_TRUE(iou({left}, {}, {}).empty());
}

TEST(MaskOps, BoxIou) {
  const std::vector<Box> dt = {{0, 0, 10, 10}, {10, 0, 5, 5}, {2, 2, 0, 0}};
  const std::vector<Box> gt = {{5, 5, 10, 10}, {0, 0, 10, 10}};
  const auto o = box_iou(dt, gt, {false, false});
  ASSERT_EQ(o.size(), 6u);
  EXPECT_DOUBLE_EQ(o[0], 25.0 / 175);  // 5x5 overlap, union 100 + 100 - 25
  EXPECT_DOUBLE_EQ(o[1], 1.0);
  EXPECT_DOUBLE_EQ(o[2], 0.0);         // (10, 0, 5, 5) vs (5, 5, ...): touches at y = 5 only
  EXPECT_DOUBLE_EQ(o[3], 0.0);         // touches the second box's right edge
  EXPECT_DOUBLE_EQ(o[4], 0.0);         // zero-area box
  EXPECT_DOUBLE_EQ(o[5], 0.0);
  const auto crowd = box_iou(dt, gt, {true, true});
  EXPECT_DOUBLE_EQ(crowd[0], 25.0 / 100);  // union is the detection's area
  EXPECT_TRUE(box_iou({}, gt, {false, false}).empty());
}

// On random blobby masks, the run-based area, box, merge and IoU equal pixel-by-pixel counts.
TEST(MaskOps, RunOperationsMatchPixelsOnRandomMasks) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t h = 1 + rng() % 9, w = 1 + rng() % 9;
    const auto random_mask = [&] {
      std::vector<uint8_t> m(h * w);
      const unsigned density = rng() % 4;  // 0: empty, 3: mostly on
      for (auto& v : m) v = (rng() % 3) < density;
      return m;
    };
    const auto a = random_mask(), b = random_mask();
    const RLE ra = encode(a.data(), h, w), rb = encode(b.data(), h, w);
    std::vector<uint8_t> both(h * w), either(h * w);
    uint64_t area_a = 0, inter = 0, uni = 0;
    int64_t x0 = w, y0 = h, x1 = -1, y1 = -1;
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        const size_t p = y * w + x;
        both[p] = a[p] & b[p];
        either[p] = a[p] | b[p];
        area_a += a[p];
        inter += both[p];
        uni += either[p];
        if (a[p]) {
          x0 = std::min(x0, x);
          y0 = std::min(y0, y);
          x1 = std::max(x1, x);
          y1 = std::max(y1, y);
        }
      }
    }
    const std::string where = "trial " + std::to_string(trial);
    EXPECT_EQ(area(ra), area_a) << where;
    EXPECT_EQ(merge({ra, rb}).counts, encode(either.data(), h, w).counts) << where;
    EXPECT_EQ(merge({ra, rb}, true).counts, encode(both.data(), h, w).counts) << where;
    const auto o = iou({ra}, {rb, rb}, {false, true});
    EXPECT_EQ(o[0], inter == 0 ? 0.0 : static_cast<double>(inter) / uni) << where;
    EXPECT_EQ(o[1], inter == 0 ? 0.0 : static_cast<double>(inter) / area_a) << where;
    // The box is tight unless a run crosses columns, where pycocotools takes all rows.
    const Box box = to_bbox(ra);
    if (area_a == 0) {
      EXPECT_EQ(box, (Box{0, 0, 0, 0})) << where;
    } else {
      EXPECT_EQ(box[0], x0) << where;
      EXPECT_EQ(box[2], x1 - x0 + 1) << where;
      EXPECT_LE(box[1], y0) << where;
      EXPECT_GE(box[1] + box[3], y1 + 1) << where;
    }
  }
}

TEST(MaskOps, BadInputThrowsWithDetail) {
  expect_error([] { from_string("25\x7f", 3, 4); }, "position 2");
  expect_error([] { from_string("25 ", 3, 4); }, "' '");
  expect_error([] { from_string("2f", 3, 4); }, "ends inside the number starting at position 1");
  expect_error([] { from_string("255", 3, 3); }, "sum to 12");
  expect_error([] { from_string("N", 3, 3); }, "decodes to -2");
  expect_error([] { from_string("oooooooo0", 3, 3); }, "longer than 7");
  expect_error([] { from_uncompressed({2, 5, 4}, 3, 4); }, "sum to 11");
  expect_error([] { from_uncompressed({2, -5, 15}, 3, 4); }, "counts[1] = -5");
  expect_error([] { from_polygon({0, 0, 1, 0, 1}, 4, 4); }, "got 5 values");
  expect_error([] { from_polygon({0, 0, 1, 1}, 4, 4); }, "got 4 values");
  expect_error([] { from_polygon({0, 0, 1, std::nan(""), 1, 1}, 4, 4); }, "coordinate 3");
  expect_error([] { from_polygons({{0, 0, 1, 0, 1, 1}, {0, 0, 1}}, 4, 4); }, "(polygon 1)");
  expect_error([] { from_polygons({}, 4, 4); }, "no polygons");
  expect_error([] { encode(nullptr, -1, 4); }, "-1x4");
  expect_error([] { encode(nullptr, 70000, 70000); }, "70000x70000");
  expect_error([] { decode(RLE{2, 2, {1, 2}}); }, "sum to 3");
  expect_error([] { area(RLE{2, 2, {1, 2, 3}}); }, "sum to 6");
  const RLE a{4, 4, {16}}, b{3, 4, {12}};
  expect_error([&] { merge({a, b}); }, "rles[1] is 3x4 but rles[0] is 4x4");
  expect_error([&] { iou({a}, {a, b}, {false, false}); }, "gt[1] is 3x4");
  expect_error([&] { iou({a}, {a}, {false, true}); }, "gt_iscrowd has 2 entries");
  expect_error([] { box_iou({{0, 0, -1, 2}}, {{0, 0, 1, 1}}, {false}); }, "dt[0]");
  expect_error([] { box_iou({{0, 0, 1, 2}}, {{0, 0, 1, 1}}, {}); }, "gt_iscrowd has 0");
}

// --- exactness against pycocotools on coco_tiny ------------------------------------------------

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return nlohmann::json::parse(in);
}

// The mask of one COCO annotation as pycocotools' annToRLE builds it.
RLE annotation_rle(const nlohmann::json& ann, int64_t h, int64_t w) {
  const auto& seg = ann.at("segmentation");
  if (seg.is_array()) return from_polygons(seg.get<std::vector<std::vector<double>>>(), h, w);
  const int64_t sh = seg.at("size")[0].get<int64_t>(), sw = seg.at("size")[1].get<int64_t>();
  if (seg.at("counts").is_string()) return from_string(seg.at("counts").get<std::string>(), sh, sw);
  return from_uncompressed(seg.at("counts").get<std::vector<int64_t>>(), sh, sw);
}

TEST(MaskOps, MatchesPycocotoolsOnCocoTiny) {
  const std::filesystem::path shared = DETKIT_SHARED_DIR;
  if (!std::filesystem::exists(shared / "fixtures/coco_masks/val2017.json")) {
    GTEST_SKIP() << "shared fixtures not found under " << shared
                 << " (need fixtures/coco_masks and data/coco_tiny)";
  }
  size_t compared = 0, crowd = 0, polygons = 0;
  for (const std::string split : {"train2017", "val2017"}) {
    const auto dataset = read_json(shared / ("data/coco_tiny/annotations/instances_" + split +
                                             ".json"));
    const auto fixture = read_json(shared / ("fixtures/coco_masks/" + split + ".json"));
    std::map<int64_t, std::pair<int64_t, int64_t>> image_size;
    for (const auto& img : dataset.at("images")) {
      image_size[img.at("id").get<int64_t>()] = {img.at("height").get<int64_t>(),
                                                 img.at("width").get<int64_t>()};
    }
    std::map<int64_t, const nlohmann::json*> expected;
    for (const auto& e : fixture.at("annotations")) expected[e.at("id").get<int64_t>()] = &e;
    ASSERT_EQ(expected.size(), dataset.at("annotations").size()) << split;

    for (const auto& ann : dataset.at("annotations")) {
      const int64_t id = ann.at("id").get<int64_t>();
      ASSERT_TRUE(expected.count(id)) << split << " annotation " << id << " has no fixture";
      const auto& want = *expected.at(id);
      const auto [h, w] = image_size.at(ann.at("image_id").get<int64_t>());
      const RLE rle = annotation_rle(ann, h, w);
      const std::string where = split + " annotation " + std::to_string(id);
      EXPECT_EQ(ann.at("iscrowd").get<int>(), want.at("iscrowd").get<int>()) << where;
      EXPECT_EQ(rle.h, want.at("size")[0].get<int64_t>()) << where;
      EXPECT_EQ(rle.w, want.at("size")[1].get<int64_t>()) << where;
      EXPECT_EQ(to_string(rle), want.at("counts").get<std::string>()) << where;
      EXPECT_EQ(area(rle), want.at("area").get<uint64_t>()) << where;
      EXPECT_EQ(to_bbox(rle), want.at("bbox").get<Box>()) << where;
      // The fixture's string parses back to the same runs; decode and encode invert each other.
      const RLE parsed = from_string(want.at("counts").get<std::string>(), rle.h, rle.w);
      EXPECT_EQ(parsed.counts, rle.counts) << where;
      const auto mask = decode(parsed);
      EXPECT_EQ(encode(mask.data(), rle.h, rle.w).counts, rle.counts) << where;
      ++compared;
      (ann.at("iscrowd").get<int>() ? crowd : polygons)++;
    }
  }
  std::printf("[ coco_tiny ] %zu annotations matched pycocotools (%zu polygon, %zu crowd RLE)\n",
              compared, polygons, crowd);
  EXPECT_EQ(compared, 1520u);
}

// IoU on runs equals IoU counted pixel by pixel, for all annotation pairs of a few real images.
TEST(MaskOps, IouMatchesPixelCountOnCocoTiny) {
  const std::filesystem::path shared = DETKIT_SHARED_DIR;
  const auto path = shared / "data/coco_tiny/annotations/instances_val2017.json";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "coco_tiny not found under " << shared;
  const auto dataset = read_json(path);
  std::map<int64_t, std::vector<const nlohmann::json*>> by_image;
  for (const auto& ann : dataset.at("annotations")) {
    by_image[ann.at("image_id").get<int64_t>()].push_back(&ann);
  }
  size_t images = 0, pairs = 0, overlapping = 0;
  for (const auto& img : dataset.at("images")) {
    if (images == 12) break;
    const int64_t h = img.at("height").get<int64_t>(), w = img.at("width").get<int64_t>();
    std::vector<RLE> rles;
    std::vector<bool> crowd;
    for (const auto* ann : by_image[img.at("id").get<int64_t>()]) {
      rles.push_back(annotation_rle(*ann, h, w));
      crowd.push_back(ann->at("iscrowd").get<int>() != 0);
    }
    if (rles.size() < 2) continue;
    ++images;
    std::vector<std::vector<uint8_t>> masks;
    for (const auto& r : rles) masks.push_back(decode(r));
    const auto o = iou(rles, rles, crowd);
    for (size_t d = 0; d < rles.size(); ++d) {
      for (size_t g = 0; g < rles.size(); ++g) {
        uint64_t inter = 0, uni = 0, dt_area = 0;
        for (size_t p = 0; p < masks[d].size(); ++p) {
          inter += masks[d][p] & masks[g][p];
          uni += masks[d][p] | masks[g][p];
          dt_area += masks[d][p];
        }
        if (crowd[g]) uni = dt_area;
        const double want = inter == 0 ? 0.0 : static_cast<double>(inter) / uni;
        EXPECT_EQ(o[d * rles.size() + g], want) << "image " << img.at("id") << " " << d << "," << g;
        ++pairs;
        if (inter > 0 && d != g) ++overlapping;
      }
    }
  }
  std::printf("[ coco_tiny ] iou checked on %zu pairs (%zu overlapping) in %zu images\n", pairs,
              overlapping, images);
  EXPECT_GT(overlapping, 0u);
}

}  // namespace
}  // namespace detkit::mask_ops
