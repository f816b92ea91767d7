// detkit prepare-panoptic-fpn --panoptic-json J --panoptic-root DIR --output-dir OUT: Detectron2's
// datasets/prepare_panoptic_fpn.py, the semantic label maps of the "panoptic separated" datasets
// (detkit/data/prepare_panoptic_fpn.h does the work).
#include <iostream>
#include <memory>
#include <string>

#include "detkit/data/prepare_panoptic_fpn.h"
#include "tools/commands.h"

namespace detkit::tools {

CommandRunner add_prepare_panoptic_fpn_command(CLI::App& app) {
  struct Options {
    std::string panoptic_json, panoptic_root, output_dir;
    data::PreparePanopticOptions prepare;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "prepare-panoptic-fpn",
      "Write the semantic label maps of Panoptic FPN's 'separated' COCO panoptic datasets from a "
      "COCO panoptic file and its PNGs (Detectron2's datasets/prepare_panoptic_fpn.py): one 8-bit "
      "PNG per image, things 0, stuff categories 1.. in id order, void 255");
  cmd->add_option("--panoptic-json", options->panoptic_json,
                  "COCO panoptic file (annotations/panoptic_val2017.json)")
      ->required();
  cmd->add_option("--panoptic-root", options->panoptic_root,
                  "Folder of its PNGs (panoptic_val2017/)")
      ->required();
  cmd->add_option("--output-dir", options->output_dir,
                  "Folder for the label maps, made if missing (panoptic_stuff_val2017/, "
                  "where coco_2017_val_panoptic_separated reads them)")
      ->required();
  cmd->add_option("--workers", options->prepare.num_workers,
                  "Threads converting images (0: one per core); does not change the output")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  cmd->footer(
      "Detectron2's layout, under the datasets root (for S in val2017, train2017):\n"
      "  detkit prepare-panoptic-fpn --panoptic-json datasets/coco/annotations/panoptic_S.json \\\n"
      "      --panoptic-root datasets/coco/panoptic_S --output-dir "
      "datasets/coco/panoptic_stuff_S\n");
  return [cmd, options]() {
    if (!*cmd) return -1;
    const size_t written = data::prepare_panoptic_fpn(
        options->panoptic_json, options->panoptic_root, options->output_dir, options->prepare);
    std::cout << "wrote " << written << " label maps to " << options->output_dir << "\n";
    return 0;
  };
}

}  // namespace detkit::tools
