// detkit infer --config-file X --weights W --input a.jpg b.jpg ... --output DIR [--confidence C]:
// Detectron2's demo.py without a window, on DefaultPredictor: each image is resized as the test
// mapper does and run through the model, and its detections scoring >= C are drawn (boxes, class
// names, scores, translucent masks, keypoints) into DIR/<stem>.png and listed in DIR/<stem>.json.
// Boxes are XYWH and keypoints are listed as COCO results files have them: "keypoints": [x, y,
// score] per keypoint, x and y pixel indices (the model's continuous coordinates - 0.5, as
// Detectron2 writes them); coordinates are rounded to 1e-4 px. A mask model's detections carry
// their mask as COCO's compressed RLE ("segmentation": {"size": [h, w], "counts": ...}). An
// RPN-only model's (ProposalNetwork's) proposals are listed with their "objectness_logit" and its
// sigmoid as "score", those scoring >= C kept, and the best 20 of them drawn (as Detectron2's
// training visualization draws the top 20 proposals).
// A panoptic model (PanopticFPN) is drawn as Detectron2's draw_panoptic_seg draws it and its
// segments are listed as its segments_info: id, isthing, category_id (the contiguous class: a
// thing class for things, a semantic-head class for stuff), "category" (its name), the score of
// things and the area (pixels) of every segment. A semantic model (SemanticSegmentor) is drawn as
// draw_sem_seg draws the argmax of its logits, and each class present is listed with its area.
// --confidence does not apply to either (the model's own thresholds chose the segments).
#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>

#include "detkit/config/defaults.h"
#include "detkit/data/catalog.h"
#include "detkit/data/image/image_io.h"
#include "detkit/data/image/image_write.h"
#include "detkit/data/metadata.h"
#include "detkit/engine/predictor.h"
#include "detkit/structures/mask_ops.h"
#include "detkit/utils/error.h"
#include "detkit/visualization/segmentation.h"
#include "detkit/visualization/visualizer.h"
#include "tools/commands.h"

namespace detkit::tools {
namespace {

namespace fs = std::filesystem;

// Names of the model's classes: the metadata of the first DATASETS.TEST (built in for COCO and
// the shapes; a dataset you registered is read once to get them), when it has
// MODEL.ROI_HEADS.NUM_CLASSES of them; empty otherwise (labels then read "class N").
struct ClassNames {
  std::vector<std::string> names;
  std::vector<int64_t> category_ids;  // the dataset's id of each class index
};

ClassNames class_names_from_config(const config::CfgNode& cfg) {
  const auto tests = cfg.get_string_list("DATASETS.TEST");
  if (tests.empty()) return {};
  const std::string& name = tests.front();
  try {
    const data::Metadata& meta = data::global_metadata().get(name);
    if (meta.thing_classes.empty()) {
      const data::DatasetFiles files = data::global_catalog().get(name);
      if (!fs::exists(files.json_file)) {
        spdlog::info("{} ({}) is not there: labelling detections 'class N'", name, files.json_file);
        return {};
      }
      data::load_dataset(name);  // records its things in the metadata
    }
    const int64_t num_classes = cfg.get_int("MODEL.ROI_HEADS.NUM_CLASSES");
    if (static_cast<int64_t>(meta.thing_classes.size()) != num_classes) {
      spdlog::warn(
          "{} has {} classes but MODEL.ROI_HEADS.NUM_CLASSES is {}: labelling "
          "detections 'class N'",
          name, meta.thing_classes.size(), num_classes);
      return {};
    }
    return {meta.thing_classes, meta.thing_dataset_ids};
  } catch (const Error& e) {
    spdlog::warn("class names from {} unavailable ({}): labelling detections 'class N'", name,
                 e.what());
    return {};
  }
}

// Names of the semantic head's classes: the stuff_classes of the first DATASETS.TEST's metadata
// when it has MODEL.SEM_SEG_HEAD.NUM_CLASSES of them; empty otherwise (labels then read "stuff N").
std::vector<std::string> stuff_names_from_config(const config::CfgNode& cfg) {
  const auto tests = cfg.get_string_list("DATASETS.TEST");
  if (tests.empty()) return {};
  const data::Metadata& meta = data::global_metadata().get(tests.front());
  const int64_t num_classes = cfg.get_int("MODEL.SEM_SEG_HEAD.NUM_CLASSES");
  if (static_cast<int64_t>(meta.stuff_classes.size()) != num_classes) {
    spdlog::warn(
        "{} has {} semantic classes but MODEL.SEM_SEG_HEAD.NUM_CLASSES is {}: labelling "
        "them 'stuff N'",
        tests.front(), meta.stuff_classes.size(), num_classes);
    return {};
  }
  return meta.stuff_classes;
}

double round_to(double value, double step) { return std::round(value / step) * step; }

nlohmann::json detections_json(const structures::Instances& kept, const ClassNames& classes) {
  at::Tensor boxes = kept.boxes("pred_boxes").tensor().to(at::kDouble).contiguous();
  at::Tensor scores = kept.tensor("scores").to(at::kDouble).contiguous();
  at::Tensor labels = kept.tensor("pred_classes").to(at::kLong).contiguous();
  at::Tensor keypoints, masks;
  if (kept.has("pred_keypoints"))
    keypoints = kept.tensor("pred_keypoints").to(at::kFloat).contiguous();
  if (kept.has("pred_masks")) masks = kept.tensor("pred_masks").to(at::kByte).contiguous();
  constexpr double kStep = 1e-4;  // px
  nlohmann::json out = nlohmann::json::array();
  for (int64_t i = 0; i < kept.size(); ++i) {
    const int64_t c = labels[i].item<int64_t>();
    const auto b = boxes[i];
    const double x0 = b[0].item<double>(), y0 = b[1].item<double>();
    nlohmann::json d;
    d["category"] = visualization::class_label(c, classes.names);
    d["class"] = c;
    if (c >= 0 && c < static_cast<int64_t>(classes.category_ids.size())) {
      d["category_id"] = classes.category_ids[c];
    }
    d["score"] = scores[i].item<double>();
    d["bbox"] = {round_to(x0, kStep), round_to(y0, kStep),
                 round_to(b[2].item<double>() - x0, kStep),
                 round_to(b[3].item<double>() - y0, kStep)};
    if (keypoints.defined()) {
      const at::Tensor row = keypoints[i];
      const auto k = row.accessor<float, 2>();
      nlohmann::json values = nlohmann::json::array();
      for (int64_t j = 0; j < k.size(0); ++j) {
        values.push_back(round_to(k[j][0] - 0.5f, kStep));
        values.push_back(round_to(k[j][1] - 0.5f, kStep));
        values.push_back(k[j][2]);
      }
      d["keypoints"] = std::move(values);
    }
    if (masks.defined()) {
      const int64_t h = masks.size(1), w = masks.size(2);
      const auto rle = mask_ops::encode(masks[i].data_ptr<uint8_t>(), h, w);
      d["segmentation"] = {{"size", {h, w}}, {"counts", mask_ops::to_string(rle)}};
    }
    out.push_back(std::move(d));
  }
  return out;
}

nlohmann::json proposals_json(const structures::Instances& kept) {
  const at::Tensor boxes = kept.boxes("proposal_boxes").tensor().to(at::kDouble).contiguous();
  const at::Tensor logits = kept.tensor("objectness_logits").to(at::kDouble).contiguous();
  constexpr double kStep = 1e-4;  // px
  const auto box = boxes.accessor<double, 2>();
  nlohmann::json out = nlohmann::json::array();
  for (int64_t i = 0; i < kept.size(); ++i) {
    const auto b = box[i];
    const double logit = logits[i].item<double>();
    out.push_back({{"bbox",
                    {round_to(b[0], kStep), round_to(b[1], kStep), round_to(b[2] - b[0], kStep),
                     round_to(b[3] - b[1], kStep)}},
                   {"objectness_logit", logit},
                   {"score", 1 / (1 + std::exp(-logit))}});
  }
  return out;
}

// Detectron2's segments_info, with the name of each segment's class and its area in the map.
nlohmann::json panoptic_json(const structures::PanopticOutput& panoptic, const ClassNames& classes,
                             const std::vector<std::string>& stuff_names) {
  const std::map<int64_t, int64_t> areas = visualization::value_areas(panoptic.ids);
  nlohmann::json out = nlohmann::json::array();
  for (const structures::PanopticSegment& s : panoptic.segments) {
    nlohmann::json d;
    d["id"] = s.id;
    d["isthing"] = s.isthing;
    d["category_id"] = s.category_id;
    d["category"] = s.isthing ? visualization::class_label(s.category_id, classes.names)
                              : visualization::stuff_label(s.category_id, stuff_names);
    if (s.isthing) {
      d["score"] = s.score;
      d["instance_id"] = s.instance_id;
    }
    const auto area = areas.find(s.id);
    d["area"] = area == areas.end() ? 0 : area->second;
    out.push_back(std::move(d));
  }
  return out;
}

// Each class of the (H, W) label map with its area (pixels), in class order.
nlohmann::json sem_seg_json(const at::Tensor& labels, const std::vector<std::string>& stuff_names) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [label, area] : visualization::value_areas(labels)) {
    out.push_back({{"class", label},
                   {"category", visualization::stuff_label(label, stuff_names)},
                   {"area", area}});
  }
  return out;
}

constexpr int64_t kProposalsDrawn = 20;

// One entry a line, so that listings diff well.
void write_listing(const std::string& stem, const nlohmann::json& entries) {
  std::ofstream json(stem + ".json");
  json << "[";
  for (size_t i = 0; i < entries.size(); ++i) {
    json << (i == 0 ? "\n  " : ",\n  ") << entries[i].dump();
  }
  json << "\n]\n";
  if (!json) throw Error("infer: cannot write " + stem + ".json");
}

void write_drawing(const std::string& stem, const cv::Mat& canvas) {
  data::write_image(stem + ".png", canvas);
}

// What one image's outputs are drawn and listed with.
struct InferContext {
  const config::CfgNode& cfg;
  const ClassNames& classes;
  const visualization::VisualizerOptions& draw_options;
  double confidence;
  std::optional<std::vector<std::string>> stuff_names;  // read at the first segmentation

  const std::vector<std::string>& stuff() {
    if (!stuff_names) stuff_names = stuff_names_from_config(cfg);
    return *stuff_names;
  }
};

void infer_panoptic(InferContext& context, const std::string& path, const std::string& stem,
                    const cv::Mat& bgr, const structures::PanopticOutput& panoptic) {
  write_drawing(stem, visualization::draw_panoptic_seg(bgr, panoptic, context.classes.names,
                                                       context.stuff(), context.draw_options));
  const nlohmann::json segments = panoptic_json(panoptic, context.classes, context.stuff());
  write_listing(stem, segments);
  const size_t things = static_cast<size_t>(std::count_if(
      panoptic.segments.begin(), panoptic.segments.end(), [](const auto& s) { return s.isthing; }));
  spdlog::info("{}: {} panoptic segments ({} things, {} stuff) -> {}.png", path, segments.size(),
               things, segments.size() - things, stem);
  for (const auto& s : segments) spdlog::info("  {}", s.dump());
}

void infer_sem_seg(InferContext& context, const std::string& path, const std::string& stem,
                   const cv::Mat& bgr, const at::Tensor& logits) {
  const at::Tensor labels = logits.argmax(0);
  write_drawing(stem,
                visualization::draw_sem_seg(bgr, labels, context.stuff(), context.draw_options));
  const nlohmann::json classes = sem_seg_json(labels, context.stuff());
  write_listing(stem, classes);
  spdlog::info("{}: {} semantic classes present -> {}.png", path, classes.size(), stem);
  for (const auto& c : classes) spdlog::info("  {}", c.dump());
}

void infer_instances(InferContext& context, const std::string& path, const std::string& stem,
                     const cv::Mat& bgr, const structures::Instances& predictions) {
  const bool proposals = predictions.has("proposal_boxes");
  const at::Tensor scores =
      proposals ? predictions.tensor("objectness_logits").sigmoid() : predictions.tensor("scores");
  const structures::Instances kept = predictions.index(scores.ge(context.confidence));
  const auto& draw_options = context.draw_options;
  write_drawing(
      stem, proposals
                ? visualization::draw_proposals(bgr, kept, kProposalsDrawn, draw_options)
                : visualization::draw_predictions(bgr, kept, context.classes.names, draw_options));
  write_listing(stem, proposals ? proposals_json(kept) : detections_json(kept, context.classes));
  if (proposals) {
    spdlog::info("{}: {} of {} proposals with objectness >= {} (the best {} drawn) -> {}.png", path,
                 kept.size(), predictions.size(), context.confidence,
                 std::min(kept.size(), kProposalsDrawn), stem);
  } else {
    spdlog::info("{}: {} of {} detections with score >= {} -> {}.png", path, kept.size(),
                 predictions.size(), context.confidence, stem);
  }
}

// Every input exists and no two share a stem (they would overwrite each other's outputs).
void check_inputs(const std::vector<std::string>& inputs) {
  std::map<std::string, std::string> stems;
  for (const auto& input : inputs) {
    if (!fs::is_regular_file(input)) throw Error("infer: input '" + input + "' is not a file");
    const std::string stem = fs::path(input).stem().string();
    auto [it, added] = stems.emplace(stem, input);
    if (!added) {
      throw Error("infer: inputs '" + it->second + "' and '" + input + "' would both write " +
                  stem + ".png: rename one");
    }
  }
}

}  // namespace

CommandRunner add_infer_command(CLI::App& app) {
  struct Options {
    std::string config_file, weights, output;
    std::vector<std::string> inputs, overrides;
    double confidence = 0.5;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "infer", "Draw a model's detections or segments onto images (PNG) and list them (JSON)");
  cmd->add_option("--config-file", o->config_file, "Detectron2-style YAML config")->required();
  cmd->add_option("--weights", o->weights, "model weights (sets MODEL.WEIGHTS)")->required();
  cmd->add_option("--input", o->inputs, "images to run on")->required()->expected(1, -1);
  cmd->add_option("--output", o->output, "folder for <stem>.png and <stem>.json")->required();
  cmd->add_option("--confidence", o->confidence, "keep detections scoring at least this")
      ->check(CLI::Range(0.0, 1.0));
  accept_overrides(cmd, "KEY VALUE config overrides");
  cmd->footer(
      "Example: detkit infer --config-file configs/quick/mask_rcnn_R_18_FPN_shapes.yaml "
      "--weights output/quick_shapes/model_final.pth --input a.jpg b.jpg --output vis\n");
  return [cmd, o]() {
    if (!*cmd) return -1;
    o->overrides = overrides_of(*cmd);
    check_inputs(o->inputs);
    std::vector<std::string> overrides = o->overrides;
    overrides.insert(overrides.end(), {"MODEL.WEIGHTS", o->weights});
    const config::CfgNode cfg = load_config(o->config_file, overrides);
    const ClassNames classes = class_names_from_config(cfg);
    visualization::VisualizerOptions draw_options;
    if (cfg.get_bool("MODEL.KEYPOINT_ON") && !cfg.get_string_list("DATASETS.TEST").empty()) {
      // The skeleton of the first DATASETS.TEST's keypoints (COCO's persons built in).
      draw_options.keypoint_skeleton = data::global_metadata()
                                           .get(cfg.get_string_list("DATASETS.TEST").front())
                                           .keypoint_skeleton();
    }
    engine::DefaultPredictor predictor(cfg);
    fs::create_directories(o->output);
    InferContext context{cfg, classes, draw_options, o->confidence, std::nullopt};
    for (const auto& path : o->inputs) {
      const cv::Mat bgr = data::read_image(path, "BGR");
      // Drawn and listed from the host, wherever MODEL.DEVICE computed them.
      const structures::ModelOutput outputs = structures::on_host(predictor.outputs(bgr));
      const std::string stem = (fs::path(o->output) / fs::path(path).stem()).string();
      // As Detectron2's demo: the panoptic map first, else the semantic map, else the instances.
      if (outputs.panoptic_seg) {
        infer_panoptic(context, path, stem, bgr, *outputs.panoptic_seg);
      } else if (outputs.sem_seg && !outputs.instances) {
        infer_sem_seg(context, path, stem, bgr, *outputs.sem_seg);
      } else if (outputs.instances) {
        infer_instances(context, path, stem, bgr, *outputs.instances);
      } else {
        throw Error("infer: " + predictor.model().name() + " gave no output for " + path);
      }
    }
    return 0;
  };
}

}  // namespace detkit::tools
