#include "detkit/evaluation/pascal_voc_evaluator.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "detkit/distributed/comm.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::evaluation {

namespace {

std::string voc_join_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) text += '\n';
    text += lines[i];
  }
  return text;
}

}  // namespace

PascalVOCDetectionEvaluator::PascalVOCDetectionEvaluator(PascalVOCEvaluatorOptions options)
    : options_(std::move(options)), lines_(options_.class_names.size()) {
  if (options_.year != 2007 && options_.year != 2012)
    throw Error("PascalVOCDetectionEvaluator: dataset '" + options_.dataset_name + "' has year " +
                std::to_string(options_.year) + " (2007 or 2012)");
  if (options_.class_names.empty())
    throw Error("PascalVOCDetectionEvaluator: dataset '" + options_.dataset_name +
                "' has no thing_classes");
}

void PascalVOCDetectionEvaluator::process(const std::string& image_id,
                                          const structures::Instances& predictions) {
  const at::Tensor boxes =
      predictions.boxes("pred_boxes").tensor().to(at::kCPU, at::kFloat).contiguous();
  const at::Tensor scores = predictions.tensor("scores").to(at::kCPU, at::kFloat).contiguous();
  const at::Tensor classes =
      predictions.tensor("pred_classes").to(at::kCPU, at::kLong).contiguous();
  const float* b = boxes.data_ptr<float>();
  const float* s = scores.data_ptr<float>();
  const int64_t* c = classes.data_ptr<int64_t>();
  for (int64_t i = 0; i < predictions.size(); ++i) {
    if (c[i] < 0 || c[i] >= static_cast<int64_t>(lines_.size()))
      throw Error("PascalVOCDetectionEvaluator: image '" + image_id +
                  "' has a detection of class " + std::to_string(c[i]) +
                  ", outside the dataset's " + std::to_string(lines_.size()) + " classes");
    lines_[c[i]].push_back(
        voc_detection_line(image_id, s[i], {b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]}));
  }
}

void PascalVOCDetectionEvaluator::process(const data::InferenceSample& sample,
                                          const structures::ModelOutput& output) {
  if (sample.index >= options_.image_ids.size())
    throw Error("PascalVOCDetectionEvaluator: image index " + std::to_string(sample.index) +
                " outside the dataset's " + std::to_string(options_.image_ids.size()) + " images");
  const std::string& image_id = options_.image_ids[sample.index];
  if (!output.instances)
    throw Error("PascalVOCDetectionEvaluator: the model gave no instances for image '" + image_id +
                "'");
  process(image_id, *output.instances);
}

std::map<std::string, CocoEvalReport> PascalVOCDetectionEvaluator::evaluate() {
  std::vector<std::vector<std::string>> all = lines_;
  if (distributed::get_world_size() > 1) {
    // "<class index>\t<line>\n" per line; image ids hold no whitespace (read_voc_image_set).
    std::string bytes;
    for (size_t c = 0; c < lines_.size(); ++c)
      for (const std::string& line : lines_[c]) bytes += std::to_string(c) + '\t' + line + '\n';
    const auto gathered = distributed::all_gather_bytes(bytes);
    if (!distributed::is_main_process()) return {};
    for (auto& per_class : all) per_class.clear();
    for (const std::string& rank_bytes : gathered) {
      size_t at = 0;
      while (at < rank_bytes.size()) {
        const size_t tab = rank_bytes.find('\t', at), end = rank_bytes.find('\n', at);
        if (tab == std::string::npos || end == std::string::npos || tab > end)
          throw Error("PascalVOCDetectionEvaluator: gathered lines: malformed record");
        const size_t c = std::stoul(rank_bytes.substr(at, tab - at));
        if (c >= all.size())
          throw Error("PascalVOCDetectionEvaluator: gathered class " + std::to_string(c) +
                      " out of range");
        all[c].push_back(rank_bytes.substr(tab + 1, end - tab - 1));
        at = end + 1;
      }
    }
  }
  const bool is_2007 = options_.year == 2007;
  spdlog::info(
      "Evaluating {} using {} metric. Note that results do not use the official Matlab API.",
      options_.dataset_name, is_2007 ? 2007 : 2012);
  const VocGroundTruth gt = load_voc_ground_truth(options_.dirname, options_.split);
  std::vector<std::vector<VocDetection>> detections;
  const std::string results_dir =
      options_.output_dir.empty() ? "" : options_.output_dir + "/pascal_voc_results";
  if (!results_dir.empty()) std::filesystem::create_directories(results_dir);
  for (size_t c = 0; c < all.size(); ++c) {
    const std::string text = voc_join_lines(all[c]);
    const std::string source = options_.class_names[c] + ".txt";
    if (!results_dir.empty()) atomic_write(results_dir + "/" + source, text);
    detections.push_back(parse_voc_detections(text, source, gt));
  }
  if (!results_dir.empty()) spdlog::info("Saving per-class results to {}", results_dir);
  const VocResult result = evaluate_voc(gt, options_.class_names, detections, is_2007);
  CocoEvalReport report;
  report.iou_type = IouType::Bbox;
  report.results = {{"AP", result.AP}, {"AP50", result.AP50}, {"AP75", result.AP75}};
  report.summary = voc_result_table(result);
  spdlog::info("{}", report.summary);
  return {{"bbox", std::move(report)}};
}

}  // namespace detkit::evaluation
