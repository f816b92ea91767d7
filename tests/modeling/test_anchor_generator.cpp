// detkit::modeling::DefaultAnchorGenerator: cell anchors by hand, the Base-RCNN-FPN config (5
// levels, 3 anchors per location), grid order and offset, broadcasting, no state, and parity
// with Detectron2's formula (re-written in Python: torchvision's generator rounds, Detectron2's
// does not).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <sstream>
#include <string>

#include "detkit/config/defaults.h"
#include "detkit/modeling/anchor_generator.h"
#include "detkit/utils/error.h"
#include "tests/parity/oracle.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::max_abs_diff;

namespace detkit::modeling {
namespace {

at::Tensor rows(std::vector<double> values) {
  return at::tensor(values, at::kDouble).reshape({-1, 4});
}

// One feature map of the given size (batch and channels do not matter).
at::Tensor feature(int64_t height, int64_t width) { return at::zeros({2, 3, height, width}); }

const std::vector<int64_t> kFpnStrides = {4, 8, 16, 32, 64};

TEST(DefaultAnchorGeneratorTest, CellAnchorsByHand) {
  // Size 32: area 1024. Ratio 0.5: w = sqrt(2048), h = w / 2; ratio 1: 32 x 32; ratio 2: h = 2w.
  const double a = std::sqrt(2048.0) / 2, b = std::sqrt(512.0) / 2;
  const at::Tensor cell = generate_cell_anchors({32}, {0.5, 1.0, 2.0});
  EXPECT_EQ(cell.scalar_type(), at::kFloat);
  EXPECT_LT(max_abs_diff(cell, rows({-a, -b, a, b, -16, -16, 16, 16, -b, -a, b, a})), 1e-6);
  // Sizes outer, ratios inner.
  const at::Tensor two = generate_cell_anchors({16, 64}, {1.0, 4.0});
  EXPECT_LT(max_abs_diff(two, rows({-8, -8, 8, 8, -4, -16, 4, 16,  //
                                    -32, -32, 32, 32, -16, -64, 16, 64})),
            1e-6);
}

TEST(DefaultAnchorGeneratorTest, Detectron2FpnConfig) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(std::string(DETKIT_SOURCE_DIR) + "/configs/Base-RCNN-FPN.yaml");
  const DefaultAnchorGeneratorOptions options =
      default_anchor_generator_options_from_config(cfg, kFpnStrides);
  EXPECT_EQ(options.offset(), 0.0);
  DefaultAnchorGenerator generator(options);
  EXPECT_EQ(generator->num_cell_anchors(), (std::vector<int64_t>{3, 3, 3, 3, 3}));
  EXPECT_EQ(generator->num_anchors(), 3);

  // A 256 x 320 image: P2..P6 are 64x80, 32x40, 16x20, 8x10, 4x5.
  std::vector<at::Tensor> features;
  for (int64_t stride : kFpnStrides) features.push_back(feature(256 / stride, 320 / stride));
  const std::vector<structures::Boxes> anchors = generator->forward(features);
  ASSERT_EQ(anchors.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(anchors[i].size(), features[i].size(2) * features[i].size(3) * 3);
    EXPECT_EQ(anchors[i].tensor().scalar_type(), at::kFloat);
  }
  // P2, size 32, offset 0: the three cell anchors at (0, 0), then at x = 4, and row 1 at y = 4.
  const double a = std::sqrt(2048.0) / 2, b = std::sqrt(512.0) / 2;
  const at::Tensor& p2 = anchors[0].tensor();
  EXPECT_LT(max_abs_diff(p2.slice(0, 0, 3), rows({-a, -b, a, b, -16, -16, 16, 16, -b, -a, b, a})),
            1e-5);
  EXPECT_LT(max_abs_diff(p2.slice(0, 3, 4), rows({4 - a, -b, 4 + a, b})), 1e-5);
  EXPECT_LT(max_abs_diff(p2.slice(0, 80 * 3 + 1, 80 * 3 + 2), rows({-16, -12, 16, 20})), 1e-5);
  // The last P2 anchor: location (63, 79), ratio 2.
  EXPECT_LT(max_abs_diff(p2.slice(0, -1), rows({316 - b, 252 - a, 316 + b, 252 + a})), 1e-4);
  // P6, size 512, stride 64: second location's ratio-1 anchor.
  const at::Tensor& p6 = anchors[4].tensor();
  EXPECT_LT(max_abs_diff(p6.slice(0, 4, 5), rows({64 - 256, -256, 64 + 256, 256})), 1e-4);
  const double a6 = std::sqrt(512.0 * 512.0 / 0.5) / 2,
               b6 = 0.5 * std::sqrt(512.0 * 512.0 / 0.5) / 2;
  EXPECT_LT(max_abs_diff(p6.slice(0, 0, 1), rows({-a6, -b6, a6, b6})), 1e-4);
}

TEST(DefaultAnchorGeneratorTest, DefaultConfigBroadcastsOneListOfSizes) {
  // Detectron2's default (a C4 model): all five sizes on the one feature map, 15 per location.
  const config::CfgNode cfg = config::get_cfg();
  DefaultAnchorGenerator generator(default_anchor_generator_options_from_config(cfg, {16}));
  EXPECT_EQ(generator->num_anchors(), 15);
  EXPECT_EQ(generator->forward({feature(3, 4)})[0].size(), 3 * 4 * 15);
  // One list over several feature maps is repeated on each.
  DefaultAnchorGenerator repeated(
      DefaultAnchorGeneratorOptions({{32, 64}}, {{1.0}}, {8, 16, 32}).offset(0.0));
  EXPECT_EQ(repeated->num_cell_anchors(), (std::vector<int64_t>{2, 2, 2}));
  for (const at::Tensor& cell : repeated->cell_anchors()) {
    EXPECT_LT(max_abs_diff(cell, rows({-16, -16, 16, 16, -32, -32, 32, 32})), 1e-6);
  }
}

TEST(DefaultAnchorGeneratorTest, ConfigAcceptsAFlatList) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"MODEL.ANCHOR_GENERATOR.SIZES", "[32, 64]",
                       "MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS", "[1.0]",
                       "MODEL.ANCHOR_GENERATOR.OFFSET", "0.5"});
  const auto options = default_anchor_generator_options_from_config(cfg, {8, 16});
  EXPECT_EQ(options.sizes(), (std::vector<std::vector<double>>{{32, 64}}));
  EXPECT_EQ(options.offset(), 0.5);
  EXPECT_EQ(DefaultAnchorGenerator(options)->num_cell_anchors(), (std::vector<int64_t>{2, 2}));
}

TEST(DefaultAnchorGeneratorTest, OffsetMovesTheGrid) {
  DefaultAnchorGenerator generator(DefaultAnchorGeneratorOptions({{8}}, {{1.0}}, {16}).offset(0.5));
  const at::Tensor anchors = generator->forward({feature(2, 3)})[0].tensor();
  // Centres (8 + 16 x, 8 + 16 y), location-major.
  EXPECT_LT(max_abs_diff(anchors, rows({4, 4,  12, 12, 20, 4,  28, 12, 36, 4,  44, 12,  //
                                        4, 20, 12, 28, 20, 20, 28, 28, 36, 20, 44, 28})),
            1e-6);
}

TEST(DefaultAnchorGeneratorTest, EmptyFeatureMap) {
  DefaultAnchorGenerator generator(
      DefaultAnchorGeneratorOptions({{32}}, {{0.5, 1.0, 2.0}}, {4, 8}).offset(0.5));
  const auto anchors = generator->forward({feature(0, 5), feature(3, 0)});
  EXPECT_EQ(anchors[0].tensor().sizes(), (at::IntArrayRef{0, 4}));
  EXPECT_EQ(anchors[1].tensor().sizes(), (at::IntArrayRef{0, 4}));
}

TEST(DefaultAnchorGeneratorTest, HasNoStateDict) {
  DefaultAnchorGenerator generator(
      DefaultAnchorGeneratorOptions({{32}, {64}}, {{0.5, 1.0, 2.0}}, {4, 8}));
  EXPECT_TRUE(generator->named_buffers().is_empty());
  EXPECT_TRUE(generator->named_parameters().is_empty());
  // Nested under a parent module, it adds nothing to the parent's state either.
  torch::nn::Module parent;
  parent.register_module("anchor_generator", generator);
  EXPECT_TRUE(parent.named_buffers().is_empty());
}

TEST(DefaultAnchorGeneratorTest, RejectsBadOptions) {
  using Options = DefaultAnchorGeneratorOptions;
  EXPECT_THROW(DefaultAnchorGenerator(Options({{32}, {64}}, {{1.0}}, {4, 8, 16})), detkit::Error);
  EXPECT_THROW(DefaultAnchorGenerator(Options({{32}}, {{1.0}, {2.0}}, {4, 8, 16})), detkit::Error);
  EXPECT_THROW(DefaultAnchorGenerator(Options({}, {{1.0}}, {4})), detkit::Error);
  EXPECT_THROW(DefaultAnchorGenerator(Options({{32}}, {{1.0}}, {4}).offset(1.0)), detkit::Error);
  EXPECT_THROW(DefaultAnchorGenerator(Options({{32}}, {{1.0}}, {})), detkit::Error);
  EXPECT_THROW(DefaultAnchorGenerator(Options({{-32}}, {{1.0}}, {4})), detkit::Error);
  // Different anchor counts per level are built, but the RPN's single count is refused.
  DefaultAnchorGenerator uneven(Options({{32}, {64, 128}}, {{1.0}}, {4, 8}));
  EXPECT_EQ(uneven->num_cell_anchors(), (std::vector<int64_t>{1, 2}));
  EXPECT_THROW(uneven->num_anchors(), detkit::Error);
  // One feature map for two strides.
  EXPECT_THROW(uneven->forward({feature(2, 2)}), c10::Error);
}

TEST(DefaultAnchorGeneratorTest, MatchesDetectron2Formula) {
  DETKIT_REQUIRE_ORACLE();
  struct Case {
    std::vector<std::vector<double>> sizes, ratios;
    std::vector<int64_t> strides;
    double offset;
    std::vector<std::pair<int64_t, int64_t>> grid;
  };
  const std::vector<Case> cases = {
      {{{32}, {64}, {128}, {256}, {512}},
       {{0.5, 1.0, 2.0}},
       kFpnStrides,
       0.0,
       {{50, 76}, {25, 38}, {13, 19}, {7, 10}, {4, 5}}},
      {{{24, 37.5}, {51.2, 80}}, {{0.3, 1.7, 2.5}, {0.25, 1.0}}, {8, 12}, 0.5, {{9, 7}, {6, 5}}},
      {{{32, 64, 128, 256, 512}}, {{0.5, 1.0, 2.0}}, {16}, 0.25, {{38, 50}}},
  };
  for (const Case& c : cases) {
    DefaultAnchorGenerator generator(
        DefaultAnchorGeneratorOptions(c.sizes, c.ratios, c.strides).offset(c.offset));
    std::vector<at::Tensor> features;
    for (const auto& [h, w] : c.grid) features.push_back(feature(h, w));
    const auto anchors = generator->forward(features);

    testing::TensorMap inputs{{"offset", at::tensor(c.offset, at::kDouble)}};
    std::vector<double> grid;
    for (size_t i = 0; i < c.strides.size(); ++i) {
      const auto& sizes = c.sizes.size() == 1 ? c.sizes[0] : c.sizes[i];
      const auto& ratios = c.ratios.size() == 1 ? c.ratios[0] : c.ratios[i];
      inputs["sizes_" + std::to_string(i)] = at::tensor(sizes, at::kDouble);
      inputs["ratios_" + std::to_string(i)] = at::tensor(ratios, at::kDouble);
      grid.insert(grid.end(),
                  {static_cast<double>(c.grid[i].first), static_cast<double>(c.grid[i].second),
                   static_cast<double>(c.strides[i])});
    }
    inputs["grid"] = at::tensor(grid, at::kDouble).reshape({-1, 3});
    const auto want = testing::run_oracle("oracle_modeling.py", "anchors", inputs);
    double worst = 0.0;
    for (size_t i = 0; i < c.strides.size(); ++i) {
      worst = std::max(worst,
                       max_abs_diff(anchors[i].tensor(), want.at("anchors_" + std::to_string(i))));
      worst = std::max(
          worst, max_abs_diff(generator->cell_anchors()[i], want.at("cell_" + std::to_string(i))));
    }
    std::cout << "DefaultAnchorGenerator vs Detectron2 formula, " << c.strides.size()
              << " levels, offset " << c.offset << ": max abs diff " << worst << "\n";
    EXPECT_LE(worst, 1e-5);
  }
}

}  // namespace
}  // namespace detkit::modeling
