#include "detkit/evaluation/coco_evaluator.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "detkit/distributed/comm.h"
#include "detkit/evaluation/box_proposals.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::evaluation {

COCOEvaluator::COCOEvaluator(std::shared_ptr<const data::CocoDataset> dataset,
                             std::vector<IouType> tasks, std::string output_dir,
                             std::vector<double> kpt_oks_sigmas)
    : dataset_(std::move(dataset)),
      tasks_(std::move(tasks)),
      output_dir_(std::move(output_dir)),
      kpt_oks_sigmas_(kpt_oks_sigmas.empty() ? coco_person_keypoint_sigmas()
                                             : std::move(kpt_oks_sigmas)) {}

void COCOEvaluator::process(int64_t image_id, const structures::Instances& on_device) {
  // Read on the host: a model on a GPU hands its predictions over where it computed them.
  const structures::Instances predictions = on_device.to(c10::kCPU);
  if (predictions.has("proposal_boxes")) {
    proposals_.push_back({image_id,
                          predictions.boxes("proposal_boxes").tensor().to(at::kFloat).contiguous(),
                          predictions.tensor("objectness_logits").to(at::kFloat).contiguous()});
    return;
  }
  const int64_t n = predictions.size();
  if (n == 0) return;
  at::Tensor boxes = predictions.boxes("pred_boxes").tensor().to(at::kFloat).contiguous();
  at::Tensor scores = predictions.tensor("scores").to(at::kFloat).contiguous();
  at::Tensor classes = predictions.tensor("pred_classes").to(at::kLong).contiguous();
  const bool with_masks = predictions.has("pred_masks");
  at::Tensor masks;
  if (with_masks) masks = predictions.tensor("pred_masks").to(at::kByte).contiguous();
  const bool with_keypoints = predictions.has("pred_keypoints");
  at::Tensor keypoints;
  if (with_keypoints) {
    keypoints = predictions.tensor("pred_keypoints").to(at::kFloat).contiguous();
    if (keypoints.dim() != 3 || keypoints.size(0) != n || keypoints.size(2) != 3)
      throw Error("COCOEvaluator: pred_keypoints must be (R, K, 3), got " +
                  c10::str(keypoints.sizes()));
  }
  auto b = boxes.accessor<float, 2>();
  for (int64_t i = 0; i < n; ++i) {
    Detection d;
    EvalObject& o = d.object;
    o.id = static_cast<int64_t>(results_.size()) + 1;
    o.image_id = image_id;
    o.category_id = dataset_->category_id_of(static_cast<int>(classes[i].item<int64_t>()));
    o.score = scores[i].item<float>();
    // XYXY -> XYWH in float32, as Detectron2 converts the tensor before writing.
    float x0 = b[i][0], y0 = b[i][1], w = b[i][2] - b[i][0], h = b[i][3] - b[i][1];
    o.bbox = {x0, y0, w, h};
    if (with_masks) {
      o.rle = mask_ops::encode(masks[i].data_ptr<uint8_t>(), masks.size(1), masks.size(2));
      d.rle_counts = mask_ops::to_string(o.rle);
    }
    if (with_keypoints) {
      // COCO's keypoints are pixel indices, the model's continuous coordinates: Detectron2
      // subtracts 0.5 from x and y (float32) before writing.
      const float* k = keypoints[i].data_ptr<float>();
      for (int64_t j = 0; j < keypoints.size(1); ++j) {
        o.keypoints.push_back(k[3 * j] - 0.5f);
        o.keypoints.push_back(k[3 * j + 1] - 0.5f);
        o.keypoints.push_back(k[3 * j + 2]);
      }
    }
    results_.push_back(std::move(d));
  }
}

namespace {
// Detections as bytes, to gather them from every rank: fixed-size fields, then the RLE's runs and
// its compressed string, each after its length.
template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}
template <typename T>
T take(const std::string& in, size_t& at) {
  if (at + sizeof(T) > in.size()) throw Error("gathered detections: truncated record");
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  at += sizeof(T);
  return v;
}
}  // namespace

std::string COCOEvaluator::serialize() const {
  std::string out;
  for (const auto& d : results_) {
    const EvalObject& o = d.object;
    put(out, o.image_id);
    put(out, o.category_id);
    put(out, o.score);
    for (double v : o.bbox) put(out, v);
    put(out, o.rle.h);
    put(out, o.rle.w);
    put(out, static_cast<uint64_t>(o.rle.counts.size()));
    for (uint32_t c : o.rle.counts) put(out, c);
    put(out, static_cast<uint64_t>(d.rle_counts.size()));
    out += d.rle_counts;
    put(out, static_cast<uint64_t>(o.keypoints.size()));
    for (double v : o.keypoints) put(out, v);
  }
  return out;
}

void COCOEvaluator::append_serialized(const std::string& bytes) {
  size_t at = 0;
  while (at < bytes.size()) {
    Detection d;
    EvalObject& o = d.object;
    o.id = static_cast<int64_t>(results_.size()) + 1;
    o.image_id = take<int64_t>(bytes, at);
    o.category_id = take<int64_t>(bytes, at);
    o.score = take<double>(bytes, at);
    for (double& v : o.bbox) v = take<double>(bytes, at);
    o.rle.h = take<int64_t>(bytes, at);
    o.rle.w = take<int64_t>(bytes, at);
    const auto runs = take<uint64_t>(bytes, at);
    if (runs > (bytes.size() - at) / sizeof(uint32_t))
      throw Error("gathered detections: truncated record");
    o.rle.counts.resize(runs);
    for (uint32_t& c : o.rle.counts) c = take<uint32_t>(bytes, at);
    const auto chars = take<uint64_t>(bytes, at);
    if (chars > bytes.size() - at) throw Error("gathered detections: truncated record");
    d.rle_counts = bytes.substr(at, chars);
    at += chars;
    const auto values = take<uint64_t>(bytes, at);
    if (values > (bytes.size() - at) / sizeof(double))
      throw Error("gathered detections: truncated record");
    o.keypoints.resize(values);
    for (double& v : o.keypoints) v = take<double>(bytes, at);
    results_.push_back(std::move(d));
  }
}

std::optional<CocoEvalReport> COCOEvaluator::evaluate_box_proposals() {
  if (distributed::get_world_size() > 1) {
    // Each image as its id, its proposal count, then its boxes and logits in float32.
    std::string bytes;
    for (const auto& p : proposals_) {
      put(bytes, p.image_id);
      put(bytes, p.boxes.size(0));
      bytes.append(static_cast<const char*>(p.boxes.data_ptr()), p.boxes.numel() * sizeof(float));
      bytes.append(static_cast<const char*>(p.objectness_logits.data_ptr()),
                   p.objectness_logits.numel() * sizeof(float));
    }
    const auto all = distributed::all_gather_bytes(bytes);
    if (!distributed::is_main_process()) return std::nullopt;
    proposals_.clear();
    for (const std::string& rank_bytes : all) {
      size_t at = 0;
      while (at < rank_bytes.size()) {
        data::ImageProposals p;
        p.image_id = take<int64_t>(rank_bytes, at);
        const auto n = take<int64_t>(rank_bytes, at);
        if (n < 0 || static_cast<uint64_t>(n) > (rank_bytes.size() - at) / (5 * sizeof(float)))
          throw Error("gathered proposals: truncated record");
        p.boxes = at::empty({n, 4}, at::kFloat);
        p.objectness_logits = at::empty({n}, at::kFloat);
        std::memcpy(p.boxes.data_ptr(), rank_bytes.data() + at, 4 * n * sizeof(float));
        at += 4 * n * sizeof(float);
        std::memcpy(p.objectness_logits.data_ptr(), rank_bytes.data() + at, n * sizeof(float));
        at += n * sizeof(float);
        proposals_.push_back(std::move(p));
      }
    }
  }
  if (!output_dir_.empty()) {
    std::filesystem::create_directories(output_dir_);
    const std::string path = output_dir_ + "/box_proposals.pkl";
    data::write_proposal_file(path, proposals_);
    spdlog::info("Saving proposals of {} images to {}", proposals_.size(), path);
  }
  spdlog::info("Evaluating bbox proposals ...");
  CocoEvalReport report;
  report.iou_type = IouType::Bbox;
  report.results = box_proposal_results(*dataset_, proposals_);
  report.summary = proposal_metrics_table(report.results);
  spdlog::info("{}", report.summary);
  return report;
}

void COCOEvaluator::process(const data::InferenceSample& sample,
                            const structures::ModelOutput& output) {
  if (!output.instances)
    throw Error("COCOEvaluator: the model gave no instances for image id " +
                std::to_string(sample.image_id) + " (" + sample.input.file_name +
                "): a semantic segmentor is evaluated by SemSegEvaluator");
  process(sample.image_id, *output.instances);
}

std::map<std::string, CocoEvalReport> COCOEvaluator::evaluate() {
  // A ProposalNetwork's evaluation: on every rank alike, also one that saw no image.
  bool proposal_task = !proposals_.empty();
  if (distributed::get_world_size() > 1) {
    const auto flags = distributed::all_gather_bytes(proposal_task ? "1" : "0");
    proposal_task = std::find(flags.begin(), flags.end(), "1") != flags.end();
  }
  if (proposal_task) {
    std::map<std::string, CocoEvalReport> reports;
    if (auto report = evaluate_box_proposals()) reports["box_proposals"] = std::move(*report);
    return reports;
  }
  if (distributed::get_world_size() > 1) {
    // Each rank saw a contiguous shard of the images: rank order is the one-process order.
    const auto all = distributed::all_gather_bytes(serialize());
    if (!distributed::is_main_process()) return {};  // rank 0 writes and reports (Detectron2)
    results_.clear();
    for (const std::string& bytes : all) append_serialized(bytes);
    spdlog::info("Gathered {} detections from {} ranks", results_.size(), all.size());
  }
  if (!output_dir_.empty()) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& d : results_) {
      const EvalObject& o = d.object;
      nlohmann::json r = {{"image_id", o.image_id},
                          {"category_id", o.category_id},
                          {"bbox", o.bbox},
                          {"score", o.score}};
      if (!d.rle_counts.empty())
        r["segmentation"] = {{"size", {o.rle.h, o.rle.w}}, {"counts", d.rle_counts}};
      if (!o.keypoints.empty()) r["keypoints"] = o.keypoints;
      all.push_back(std::move(r));
    }
    std::filesystem::create_directories(output_dir_);
    std::string path = output_dir_ + "/coco_instances_results.json";
    atomic_write(path, all.dump());
    spdlog::info("Saving results to {}", path);
  }
  std::map<std::string, CocoEvalReport> reports;
  for (IouType type : tasks_) {
    if (type == IouType::Segm && !results_.empty() && results_.front().rle_counts.empty()) continue;
    if (type == IouType::Keypoints && !results_.empty() &&
        results_.front().object.keypoints.size() != 3 * kpt_oks_sigmas_.size()) {
      throw Error("COCOEvaluator: the model predicts " +
                  std::to_string(results_.front().object.keypoints.size() / 3) +
                  " keypoints, but there are " + std::to_string(kpt_oks_sigmas_.size()) +
                  " OKS sigmas (TEST.KEYPOINT_OKS_SIGMAS, or COCO's 17 when empty)");
    }
    CocoGroundTruth gt = ground_truth_from_dataset(*dataset_, type, kpt_oks_sigmas_.size());
    std::vector<EvalObject> detections;
    detections.reserve(results_.size());
    for (const auto& d : results_) {
      EvalObject o = d.object;
      // Detectron2 drops the box before segm evaluation (mask area); keypoint results keep it,
      // so loadRes gives them the box's area.
      o.area = type == IouType::Segm ? static_cast<double>(mask_ops::area(o.rle))
                                     : o.bbox[2] * o.bbox[3];
      detections.push_back(std::move(o));
    }
    EvalParams params = default_eval_params(type);
    params.kpt_oks_sigmas = kpt_oks_sigmas_;
    CocoEvalReport report = evaluate_coco(gt, std::move(detections), type, params);
    report.category_names = gt.category_names;
    // pycocotools' summary, then Detectron2's "Evaluation results for <task>:" tables.
    spdlog::info("COCOeval {}:\n{}", iou_type_name(type), report.summary);
    spdlog::info("{}", detectron2_tables(report, gt.category_names));
    reports[iou_type_name(type)] = std::move(report);
  }
  return reports;
}

}  // namespace detkit::evaluation
