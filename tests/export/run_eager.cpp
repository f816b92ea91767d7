// The reference for exported segmentation models: detkit's own model (DefaultPredictor's, weights
// loaded, eval mode) run on exactly the inputs the exported model is given, its outputs written
// as run_torchscript.cpp writes the exported model's, for check_export.py to compare tensor by
// tensor (the semantic logits, the panoptic id map and segments, the instances).
//
// run_eager CONFIG WEIGHTS [KEY VALUE ...] IN_DIR OUT_DIR
//   IN_DIR/<stem>.json: {"shape": [3, H, W], "original_size": [h, w]}; IN_DIR/<stem>.u8 the image
//   (uint8, C x H x W, resized as the test mapper does). Writes OUT_DIR/<stem>.<output>.bin and
//   OUT_DIR/<stem>.json ({output: {"type", "dims"}}) with the exported model's output names:
//   pred_boxes, scores, pred_classes, pred_masks, sem_seg, panoptic_seg and segments_info (S, 5)
//   int64 rows id, isthing, category_id, instance_id (-1 for stuff), area (pixels in the map).
#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "detkit/config/defaults.h"
#include "detkit/engine/predictor.h"
#include "tests/export/runner_io.h"

namespace fs = std::filesystem;

using detkit::export_test::ints_of;
using detkit::export_test::read;
using detkit::export_test::type_name;

namespace {

// segments_info as the exported models give it.
at::Tensor segments_info(const detkit::structures::PanopticOutput& panoptic) {
  at::Tensor rows = at::zeros({static_cast<int64_t>(panoptic.segments.size()), 5}, at::kLong);
  for (size_t k = 0; k < panoptic.segments.size(); ++k) {
    const auto& s = panoptic.segments[k];
    const int64_t area = panoptic.ids.eq(s.id).sum().item<int64_t>();
    rows[static_cast<int64_t>(k)] =
        at::tensor({int64_t{s.id}, int64_t{s.isthing}, s.category_id, s.instance_id, area});
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || (argc - 5) % 2 != 0) {
    std::cerr << "usage: run_eager CONFIG WEIGHTS [KEY VALUE ...] IN_DIR OUT_DIR\n";
    return 2;
  }
  const fs::path in_dir = argv[argc - 2], out_dir = argv[argc - 1];
  detkit::config::CfgNode cfg = detkit::config::get_cfg();
  cfg.merge_from_file(argv[1]);
  std::vector<std::string> overrides(argv + 3, argv + argc - 2);
  overrides.insert(overrides.end(), {"MODEL.WEIGHTS", argv[2], "MODEL.DEVICE", "cpu",
                                     "SOLVER.AMP.ENABLED", "False"});
  cfg.merge_from_list(overrides);
  detkit::engine::DefaultPredictor predictor(cfg);
  const at::InferenceMode inference_mode;  // as DefaultPredictor runs the model
  fs::create_directories(out_dir);
  std::vector<fs::path> inputs;
  for (const auto& entry : fs::directory_iterator(in_dir))
    if (entry.path().extension() == ".json") inputs.push_back(entry.path());
  std::sort(inputs.begin(), inputs.end());
  for (const auto& meta_path : inputs) {
    const std::string stem = meta_path.stem().string();
    const std::string meta = read(meta_path);
    const std::vector<int64_t> shape = ints_of(meta, "shape"),
                               size = ints_of(meta, "original_size");
    std::string bytes = read(in_dir / (stem + ".u8"));
    detkit::structures::ModelInput input;
    input.image = at::from_blob(bytes.data(), shape, at::kByte).to(at::kFloat);
    input.height = size[0];
    input.width = size[1];
    const detkit::structures::ModelOutput output = predictor.model().outputs({input}).front();
    std::map<std::string, at::Tensor> tensors;
    if (output.instances) {
      const auto& found = *output.instances;
      tensors["pred_boxes"] = found.boxes("pred_boxes").tensor();
      tensors["scores"] = found.tensor("scores");
      tensors["pred_classes"] = found.tensor("pred_classes");
      if (found.has("pred_masks")) tensors["pred_masks"] = found.tensor("pred_masks");
    }
    if (output.sem_seg) tensors["sem_seg"] = *output.sem_seg;
    if (output.panoptic_seg) {
      tensors["panoptic_seg"] = output.panoptic_seg->ids;
      tensors["segments_info"] = segments_info(*output.panoptic_seg);
    }
    std::ostringstream listing;
    listing << "{";
    for (const auto& [name, value] : tensors) {
      const at::Tensor t = value.to(at::kCPU).contiguous();
      std::ofstream(out_dir / (stem + "." + name + ".bin"), std::ios::binary)
          .write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
      listing << (listing.tellp() > 1 ? ", " : "") << "\"" << name << "\": {\"type\": \""
              << type_name(t.scalar_type()) << "\", \"dims\": [";
      for (int64_t d = 0; d < t.dim(); ++d) listing << (d ? ", " : "") << t.size(d);
      listing << "]}";
    }
    listing << "}";
    std::ofstream(out_dir / (stem + ".json")) << listing.str();
    std::cout << stem << ": " << tensors.size() << " outputs\n";
  }
  return 0;
}
