#include "detkit/evaluation/sem_seg_evaluation.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "detkit/distributed/comm.h"
#include "detkit/structures/mask_ops.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::evaluation {

PixelMap predicted_classes(const at::Tensor& prediction, const std::string& name) {
  at::Tensor classes;
  if (prediction.dim() == 3) {
    classes = prediction.argmax(/*dim=*/0);
  } else if (prediction.dim() == 2 && !at::isFloatingType(prediction.scalar_type()) &&
             prediction.scalar_type() != at::kBool) {
    classes = prediction;
  } else {
    throw Error(name +
                ": a semantic prediction must be (H, W) integer classes or (C, H, W) "
                "scores, got " +
                c10::str(prediction.sizes()) + " " +
                std::string(c10::toString(prediction.scalar_type())));
  }
  classes = classes.to(at::kCPU, at::kLong).contiguous();
  const int64_t* v = classes.data_ptr<int64_t>();
  return {classes.size(0), classes.size(1), std::vector<int64_t>(v, v + classes.numel())};
}

SemSegEvaluator::SemSegEvaluator(
    std::vector<std::string> class_names, int64_t ignore_label, std::string output_dir,
    std::optional<std::map<int64_t, int64_t>> contiguous_id_to_dataset_id, bool boundary_iou)
    : class_names_(std::move(class_names)),
      ignore_label_(ignore_label),
      output_dir_(std::move(output_dir)),
      contiguous_id_to_dataset_id_(std::move(contiguous_id_to_dataset_id)),
      // Detectron2 computes B-IoU on uint8 label maps, so only below 255 classes.
      boundary_iou_(boundary_iou && class_names_.size() < 255),
      matrix_(static_cast<int64_t>(class_names_.size())),
      boundary_matrix_(static_cast<int64_t>(class_names_.size())) {}

void SemSegEvaluator::process(const std::string& file_name, const std::string& ground_truth_png,
                              const at::Tensor& prediction) {
  process(file_name, read_label_png(ground_truth_png), predicted_classes(prediction, file_name),
          ground_truth_png);
}

void SemSegEvaluator::process(const std::string& file_name, const PixelMap& ground_truth,
                              const PixelMap& prediction, const std::string& ground_truth_name) {
  const int64_t c = matrix_.num_classes();
  check_pixel_map_size(ground_truth, prediction.height, prediction.width,
                       ground_truth_name + " (the prediction of " + file_name + ")");
  // The ignore label becomes index C; any other value outside the classes would be counted in a
  // wrong cell by Detectron2's bincount, so it is refused.
  std::vector<int64_t> gt(ground_truth.values.size());
  for (size_t i = 0; i < gt.size(); ++i) {
    const int64_t v = ground_truth.values[i];
    if (v == ignore_label_) {
      gt[i] = c;
    } else if (v < 0 || v >= c) {
      throw Error(ground_truth_name + ": label " + std::to_string(v) + " at (" +
                  std::to_string(i / ground_truth.width) + ", " +
                  std::to_string(i % ground_truth.width) + ") is neither a class (0.." +
                  std::to_string(c - 1) + ") nor the ignore label " +
                  std::to_string(ignore_label_));
    } else {
      gt[i] = v;
    }
  }
  for (size_t i = 0; i < prediction.values.size(); ++i) {
    const int64_t v = prediction.values[i];
    if (v < 0 || v >= c)
      throw Error(file_name + ": predicted class " + std::to_string(v) + " at (" +
                  std::to_string(i / prediction.width) + ", " +
                  std::to_string(i % prediction.width) + ") is not one of the " +
                  std::to_string(c) + " classes");
  }
  matrix_.add(prediction.values.data(), gt.data(), gt.size());
  if (boundary_iou_) {
    const auto gt_boundary = label_boundary(gt, prediction.height, prediction.width);
    const auto predicted_boundary =
        label_boundary(prediction.values, prediction.height, prediction.width);
    // Detectron2 bins the two boundary maps while they are uint8 arrays, so numpy computes
    // (C + 1) * b_pred + b_gt in uint8: the flat index wraps modulo 256 and only the matrix's
    // first 256 cells fill (its Boundary IoU is the boundary IoU only up to 14 classes).
    // Reproduced as it is, so that the numbers are Detectron2's.
    const int64_t side = c + 1;
    std::vector<int64_t> rows(gt_boundary.size()), columns(gt_boundary.size());
    for (size_t i = 0; i < gt_boundary.size(); ++i) {
      const int64_t cell = (side * predicted_boundary[i] + gt_boundary[i]) & 0xFF;
      rows[i] = cell / side;
      columns[i] = cell % side;
    }
    boundary_matrix_.add(rows.data(), columns.data(), rows.size());
  }
  add_predictions_json(file_name, prediction);
}

namespace {

// Each class's mask as COCO RLE runs (pycocotools' encode of `classes == label`), for every class
// at once in one column-major pass instead of one mask per class.
std::vector<std::vector<uint32_t>> class_mask_runs(const PixelMap& classes, int64_t num_classes) {
  std::vector<std::vector<uint32_t>> runs(static_cast<size_t>(num_classes));
  std::vector<uint64_t> last_change(static_cast<size_t>(num_classes), 0);
  auto close_run = [&](int64_t label, uint64_t at) {
    runs[label].push_back(static_cast<uint32_t>(at - last_change[label]));
    last_change[label] = at;
  };
  int64_t previous = -1;
  uint64_t k = 0;
  for (int64_t x = 0; x < classes.width; ++x) {
    for (int64_t y = 0; y < classes.height; ++y, ++k) {
      const int64_t label = classes.values[y * classes.width + x];
      if (label == previous) continue;
      if (previous >= 0) close_run(previous, k);  // its "on" run ends
      close_run(label, k);                        // its "off" run ends
      previous = label;
    }
  }
  if (previous >= 0) close_run(previous, k);
  for (int64_t label = 0; label < num_classes; ++label)
    if (!runs[label].empty() && last_change[label] < k) close_run(label, k);  // trailing "off"
  return runs;
}

}  // namespace

void SemSegEvaluator::add_predictions_json(const std::string& file_name,
                                           const PixelMap& prediction) {
  // Detectron2's encode_json_sem_seg: per predicted class, in increasing order, its mask as a
  // compressed RLE.
  const auto runs = class_mask_runs(prediction, matrix_.num_classes());
  for (int64_t label = 0; label < matrix_.num_classes(); ++label) {
    if (runs[label].empty()) continue;
    int64_t category_id = label;
    if (contiguous_id_to_dataset_id_) {
      const auto it = contiguous_id_to_dataset_id_->find(label);
      if (it == contiguous_id_to_dataset_id_->end())
        throw Error(file_name + ": predicted class " + std::to_string(label) +
                    " has no dataset id (stuff_dataset_id_to_contiguous_id)");
      category_id = it->second;
    }
    const mask_ops::RLE rle{prediction.height, prediction.width, runs[label]};
    nlohmann::ordered_json entry = {
        {"file_name", file_name},
        {"category_id", category_id},
        {"segmentation", {{"size", {rle.h, rle.w}}, {"counts", mask_ops::to_string(rle)}}}};
    predictions_.push_back(entry.dump());
  }
}

void SemSegEvaluator::gather() {
  const nlohmann::json mine = {{"matrix", matrix_.counts()},
                               {"boundary", boundary_matrix_.counts()},
                               {"predictions", predictions_}};
  const std::vector<uint8_t> cbor = nlohmann::json::to_cbor(mine);
  const auto all = distributed::all_gather_bytes(std::string(cbor.begin(), cbor.end()));
  if (!distributed::is_main_process()) return;
  std::fill(matrix_.counts().begin(), matrix_.counts().end(), 0);
  std::fill(boundary_matrix_.counts().begin(), boundary_matrix_.counts().end(), 0);
  predictions_.clear();
  for (const std::string& bytes : all) {
    const nlohmann::json rank = nlohmann::json::from_cbor(bytes);
    ConfusionMatrix matrix(matrix_.num_classes()), boundary(matrix_.num_classes());
    matrix.counts() = rank.at("matrix").get<std::vector<int64_t>>();
    boundary.counts() = rank.at("boundary").get<std::vector<int64_t>>();
    if (matrix.counts().size() != matrix_.counts().size() ||
        boundary.counts().size() != matrix_.counts().size())
      throw Error("SemSegEvaluator: the ranks' confusion matrices differ in size");
    matrix_.add(matrix);
    boundary_matrix_.add(boundary);
    for (const auto& entry : rank.at("predictions"))
      predictions_.push_back(entry.get<std::string>());
  }
}

SemSegMetrics SemSegEvaluator::metrics() const {
  return sem_seg_metrics(matrix_, boundary_iou_ ? &boundary_matrix_ : nullptr);
}

std::map<std::string, CocoEvalReport> SemSegEvaluator::evaluate() {
  if (distributed::get_world_size() > 1) {
    gather();
    if (!distributed::is_main_process()) return {};  // rank 0 writes and reports (Detectron2)
  }
  if (!output_dir_.empty()) {
    std::string json = "[";
    for (size_t i = 0; i < predictions_.size(); ++i) json += (i ? ", " : "") + predictions_[i];
    json += "]";
    std::filesystem::create_directories(output_dir_);
    atomic_write(output_dir_ + "/sem_seg_predictions.json", json);
  }
  const auto results = sem_seg_results(metrics(), class_names_);
  CocoEvalReport report;
  report.iou_type = IouType::Segm;  // unused: the numbers are in `results`
  report.results = std::map<std::string, double>(results.begin(), results.end());
  report.summary = sem_seg_results_repr(results);
  spdlog::info("{}", report.summary);
  return {{"sem_seg", std::move(report)}};
}

}  // namespace detkit::evaluation
