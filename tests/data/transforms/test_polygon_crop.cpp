// crop_polygon against hand-worked cuts, and on random polygons against two oracles that do not
// clip: a point-in-polygon test of the uncut polygon at sample points inside the window, and
// pycocotools' rasteriser (polygons_to_bitmask) of the uncut polygon on the window's canvas.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "detkit/data/transforms/polygon_crop.h"
#include "detkit/structures/masks.h"

namespace detkit::data {
namespace {

using Polygons = std::vector<std::vector<double>>;

double area(const std::vector<double>& p) {
  double twice = 0;
  const size_t n = p.size() / 2;
  for (size_t i = 0; i < n; ++i) {
    const size_t j = (i + 1) % n;
    twice += p[2 * i] * p[2 * j + 1] - p[2 * j] * p[2 * i + 1];
  }
  return std::abs(0.5 * twice);
}

// Even-odd point-in-polygon (crossings of a ray to +x).
bool inside(const std::vector<double>& p, double x, double y) {
  bool in = false;
  const size_t n = p.size() / 2;
  for (size_t i = 0, j = n - 1; i < n; j = i++) {
    const double xi = p[2 * i], yi = p[2 * i + 1], xj = p[2 * j], yj = p[2 * j + 1];
    if ((yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi) in = !in;
  }
  return in;
}

TEST(PolygonCrop, InsideIsKeptOutsideAndEdgeContactAreDropped) {
  const std::vector<double> square = {2, 2, 4, 2, 4, 4, 2, 4};
  const Polygons in = crop_polygon(square, 0, 0, 10, 10);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0], square);
  EXPECT_TRUE(crop_polygon(square, 5, 5, 10, 10).empty());
  // Touching the window along its left side only, or at its corner only: no area inside.
  EXPECT_TRUE(crop_polygon({0, 0, 2, 0, 2, 2, 0, 2}, 2, 0, 10, 10).empty());
  EXPECT_TRUE(crop_polygon({0, 0, 2, 0, 2, 2, 0, 2}, 2, 2, 10, 10).empty());
  // A polygon covering the window gives the window.
  const Polygons window = crop_polygon({-5, -5, 20, -5, 20, 20, -5, 20}, 1, 2, 3, 4);
  ASSERT_EQ(window.size(), 1u);
  EXPECT_DOUBLE_EQ(area(window[0]), 4.0);
  for (size_t k = 0; k < window[0].size(); k += 2) {
    EXPECT_TRUE(window[0][k] == 1 || window[0][k] == 3);
    EXPECT_TRUE(window[0][k + 1] == 2 || window[0][k + 1] == 4);
  }
}

TEST(PolygonCrop, Detectron2sTriangleExample) {
  // DatasetMapper's comment: the triangle (0,0), (2,0), (0,2) cut by the box (1,0)-(2,2) is the
  // triangle (1,0), (2,0), (1,1).
  const Polygons cut = crop_polygon({0, 0, 2, 0, 0, 2}, 1, 0, 2, 2);
  ASSERT_EQ(cut.size(), 1u);
  ASSERT_EQ(cut[0].size(), 6u);
  EXPECT_DOUBLE_EQ(area(cut[0]), 0.5);
  double x0 = 9, y0 = 9, x1 = -9, y1 = -9;
  for (size_t k = 0; k < 6; k += 2) {
    x0 = std::min(x0, cut[0][k]), x1 = std::max(x1, cut[0][k]);
    y0 = std::min(y0, cut[0][k + 1]), y1 = std::max(y1, cut[0][k + 1]);
  }
  EXPECT_EQ(std::vector<double>({x0, y0, x1, y1}), std::vector<double>({1, 0, 2, 1}));
}

TEST(PolygonCrop, AUCutAcrossItsArmsGivesTwoPolygons) {
  // A U opening upwards: arms x in [0, 2] and [4, 6], joined for y in [4, 6]; the window
  // y <= 3 keeps the two arms' lower parts, which shapely gives as two polygons.
  const std::vector<double> u = {0, 0, 2, 0, 2, 4, 4, 4, 4, 0, 6, 0, 6, 6, 0, 6};
  const std::vector<double> flipped_u = {0, 6, 0, 0, 6, 0, 6, 6, 4, 6, 4, 2, 2, 2, 2, 6};
  for (const bool up : {true, false}) {
    const Polygons cut =
        up ? crop_polygon(u, -1, -1, 10, 3) : crop_polygon(flipped_u, -1, 3, 10, 10);
    ASSERT_EQ(cut.size(), 2u) << (up ? "U" : "upside-down U");
    EXPECT_DOUBLE_EQ(area(cut[0]) + area(cut[1]), 12.0);
    EXPECT_DOUBLE_EQ(area(cut[0]), 6.0);
  }
}

// Random polygons: star-shaped around a centre with random radii (concave, many arms), cut by
// random windows. Returns the polygon's points.
std::vector<double> random_star(std::mt19937& gen, double cx, double cy, double r_max) {
  std::uniform_int_distribution<int> count(3, 24);
  std::uniform_real_distribution<double> radius(0.15 * r_max, r_max), jitter(-0.4, 0.4);
  const int n = count(gen);
  std::vector<double> p;
  for (int i = 0; i < n; ++i) {
    const double angle = (i + 0.5 + jitter(gen)) * 2 * M_PI / n, r = radius(gen);
    p.push_back(cx + r * std::cos(angle));
    p.push_back(cy + r * std::sin(angle));
  }
  return p;
}

TEST(PolygonCrop, RandomPolygonsMatchPointInPolygonAndTheRasterisedUncutPolygon) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> centre(10, 50), size(4, 30);
  std::uniform_int_distribution<int> corner(0, 40), extent(4, 40);
  int polygons = 0, pieces = 0, split = 0;
  int64_t samples = 0, sample_mismatches = 0, pixels = 0, pixel_mismatches = 0,
          border_mismatches = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::vector<double> p = random_star(gen, centre(gen), centre(gen), size(gen));
    // Integer windows (RandomCrop's), and some with vertices exactly on their sides.
    const int x0 = corner(gen), y0 = corner(gen), w = extent(gen), h = extent(gen);
    std::vector<double> q = p;
    if (trial % 4 == 0) q[0] = x0, q[3] = y0 + h;
    const Polygons cut = crop_polygon(q, x0, y0, x0 + w, y0 + h);
    ++polygons;
    pieces += static_cast<int>(cut.size());
    split += cut.size() > 1;
    for (const auto& piece : cut) {
      ASSERT_GE(piece.size(), 6u);
      for (size_t k = 0; k < piece.size(); k += 2) {
        ASSERT_TRUE(piece[k] >= x0 && piece[k] <= x0 + w && piece[k + 1] >= y0 &&
                    piece[k + 1] <= y0 + h);
      }
    }
    // Points inside the window, off any pixel line: inside the uncut polygon <=> inside a piece.
    for (double y = y0 + 0.137; y < y0 + h; y += 0.5) {
      for (double x = x0 + 0.291; x < x0 + w; x += 0.5) {
        int in_pieces = 0;
        for (const auto& piece : cut) in_pieces += inside(piece, x, y);
        ASSERT_LE(in_pieces, 1) << "pieces overlap at (" << x << ", " << y << ")";
        ++samples;
        sample_mismatches += inside(q, x, y) != (in_pieces == 1);
      }
    }
    // pycocotools' rasteriser on the window's canvas: the uncut polygon moved by (-x0, -y0)
    // (rows clamped, columns outside skipped: the cut of its full mask) against the pieces.
    std::vector<double> moved = q;
    for (size_t k = 0; k < moved.size(); k += 2) moved[k] -= x0, moved[k + 1] -= y0;
    Polygons moved_pieces = cut;
    for (auto& piece : moved_pieces)
      for (size_t k = 0; k < piece.size(); k += 2) piece[k] -= x0, piece[k + 1] -= y0;
    const at::Tensor whole = structures::polygons_to_bitmask({moved}, h, w);
    const at::Tensor cut_mask = moved_pieces.empty()
                                    ? at::zeros({h, w}, at::kBool)
                                    : structures::polygons_to_bitmask(moved_pieces, h, w);
    // Not equal by construction: the rasteriser rounds each edge's end points to 1/5 pixel and
    // interpolates between them, and an edge cut at the window has another end point than the
    // uncut one, so pixels along the edges may flip (and the canvas's outermost rows and columns,
    // where rows are clamped); a wrong cut differs by whole runs of pixels.
    const at::Tensor differ = whole.ne(cut_mask);
    pixels += whole.sum().item<int64_t>();
    border_mismatches += differ.sum().item<int64_t>();
    if (h > 2 && w > 2) {
      const int64_t in = differ.slice(0, 1, h - 1).slice(1, 1, w - 1).sum().item<int64_t>();
      pixel_mismatches += in;
      border_mismatches -= in;
    }
  }
  std::printf(
      "%d polygons cut into %d pieces (%d cut into several); point-in-polygon: %lld of %lld "
      "samples differ; rasterised: %lld of %lld mask pixels differ inside the canvas, %lld on "
      "its outermost rows and columns\n",
      polygons, pieces, split, static_cast<long long>(sample_mismatches),
      static_cast<long long>(samples), static_cast<long long>(pixel_mismatches),
      static_cast<long long>(pixels), static_cast<long long>(border_mismatches));
  EXPECT_GT(split, 10);  // the random cases do cut polygons apart
  EXPECT_EQ(sample_mismatches, 0);
  EXPECT_LE(pixel_mismatches + border_mismatches, pixels / 100);
}

}  // namespace
}  // namespace detkit::data
