// detkit make-shapes --out DIR [--train N] [--val M] [--size WxH] [--seed S]: writes the
// synthetic shapes dataset (COCO instances JSON + JPEG images).
#include <iostream>
#include <memory>
#include <regex>
#include <string>

#include "detkit/data/shapes/shapes.h"
#include "detkit/utils/error.h"
#include "tools/commands.h"

namespace detkit::tools {
namespace {

// "320x320" -> width 320, height 320.
void parse_size(const std::string& text, data::ShapesOptions& options) {
  static const std::regex kSize(R"(\s*([0-9]{1,5})\s*[xX]\s*([0-9]{1,5})\s*)");
  std::smatch match;
  if (!std::regex_match(text, match, kSize)) {
    throw Error("make-shapes: --size must be WIDTHxHEIGHT in pixels, e.g. 320x320; got '" + text +
                "'");
  }
  const int width = std::stoi(match[1].str()), height = std::stoi(match[2].str());
  for (int side : {width, height}) {
    if (side < data::kShapesMinSide || side > data::kShapesMaxSide) {
      throw Error("make-shapes: --size " + text + ": width and height must be within [" +
                  std::to_string(data::kShapesMinSide) + ", " +
                  std::to_string(data::kShapesMaxSide) + "]");
    }
  }
  options.width = width;
  options.height = height;
}

}  // namespace

CommandRunner add_make_shapes_command(CLI::App& app) {
  struct Options {
    data::ShapesOptions shapes;
    std::string size = "320x320";
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "make-shapes",
      "Write the synthetic shapes dataset: circles, triangles and rectangles (COCO categories 1, "
      "2, 3) on cluttered backgrounds, with occlusion; polygons describe the visible parts");
  cmd->add_option("--out", options->shapes.out_dir,
                  "Output folder: annotations/instances_{train,val}.json, train/*.jpg, val/*.jpg")
      ->required();
  cmd->add_option("--train", options->shapes.num_train, "Number of training images")
      ->check(CLI::Range(0, 10'000'000))
      ->capture_default_str();
  cmd->add_option("--val", options->shapes.num_val, "Number of validation images")
      ->check(CLI::Range(0, 10'000'000))
      ->capture_default_str();
  cmd->add_option("--size", options->size, "Image size WIDTHxHEIGHT (each side 32..4096)")
      ->capture_default_str();
  cmd->add_option("--seed", options->shapes.seed,
                  "Random seed; the same seed writes byte-identical files")
      ->capture_default_str();
  cmd->add_option("--workers", options->shapes.num_workers,
                  "Threads rendering images (0: one per core); does not change the output")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  cmd->add_flag("--panoptic", options->shapes.panoptic,
                "Stuff backgrounds (textures: categories 4 stripes, 5 checks, 6 grain) and "
                "Detectron2's COCO panoptic files: annotations/panoptic_{train,val}.json, "
                "panoptic_{train,val}/*.png, panoptic_stuff_{train,val}/*.png");
  cmd->footer(
      "Example: detkit make-shapes --out datasets/shapes --train 200 --val 50 --size 320x320 "
      "--seed 0\n");
  return [cmd, options]() {
    if (!*cmd) return -1;
    data::ShapesOptions shapes = options->shapes;
    parse_size(options->size, shapes);
    data::make_shapes(shapes);
    std::cout << "wrote " << shapes.num_train << " train and " << shapes.num_val << " val images ("
              << shapes.width << "x" << shapes.height << ", seed " << shapes.seed << ") to "
              << shapes.out_dir << "\n";
    return 0;
  };
}

}  // namespace detkit::tools
