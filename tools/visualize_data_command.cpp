// detkit visualize-data --config-file X --output DIR [--count N]: Detectron2's
// visualize_data.py --source dataloader. Draws the ground truth of the first N training images
// exactly as the model receives them (train loader: resized, flipped, filtered targets) into
// DIR/train_0000.png, ...
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>

#include "detkit/config/defaults.h"
#include "detkit/data/image/image_write.h"
#include "detkit/data/loader.h"
#include "detkit/data/metadata.h"
#include "detkit/engine/defaults.h"
#include "detkit/utils/error.h"
#include "detkit/visualization/visualizer.h"
#include "tools/commands.h"

namespace detkit::tools {

CommandRunner add_visualize_data_command(CLI::App& app) {
  struct Options {
    std::string config_file, output;
    int count = 8;
    std::vector<std::string> overrides;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "visualize-data", "Draw the training set's ground truth as the model sees it (PNG files)");
  cmd->add_option("--config-file", o->config_file, "Detectron2-style YAML config")->required();
  cmd->add_option("--output", o->output, "folder for train_0000.png, ...")->required();
  cmd->add_option("--count", o->count, "images to draw")->check(CLI::PositiveNumber);
  accept_overrides(cmd, "KEY VALUE config overrides");
  cmd->footer(
      "Example: detkit visualize-data --config-file configs/quick/mask_rcnn_R_18_FPN_shapes.yaml "
      "--output vis --count 4\n");
  return [cmd, o]() {
    if (!*cmd) return -1;
    o->overrides = overrides_of(*cmd);
    const config::CfgNode cfg = load_config(o->config_file, o->overrides);
    engine::ensure_builtin_datasets(cfg);
    auto loader = data::build_detection_train_loader(cfg);
    // Loading DATASETS.TRAIN recorded its things in the metadata of its first name.
    const std::vector<std::string> class_names =
        data::global_metadata().get(cfg.get_string_list("DATASETS.TRAIN").front()).thing_classes;
    const std::string format = cfg.get_string("INPUT.FORMAT");
    std::filesystem::create_directories(o->output);
    int written = 0;
    while (written < o->count) {
      for (const auto& input : loader->next_batch()) {
        if (written == o->count) break;
        const cv::Mat image = visualization::tensor_to_bgr_image(input.image, format);
        const cv::Mat canvas =
            input.instances ? visualization::draw_ground_truth(image, *input.instances, class_names)
                            : image;
        const std::string path =
            (std::filesystem::path(o->output) / fmt::format("train_{:04d}.png", written)).string();
        data::write_image(path, canvas);
        spdlog::info("{}: {}x{} input, {} instances", path, image.cols, image.rows,
                     input.instances ? input.instances->size() : 0);
        ++written;
      }
    }
    return 0;
  };
}

}  // namespace detkit::tools
