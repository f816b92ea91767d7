// detkit evaluate: scores a results file against ground truth, as the reference tools do.
//   --iou-type bbox|segm|keypoints --gt instances.json --results results.json: COCO metrics
//     identical to pycocotools' COCOeval with default parameters (keypoints: OKS with COCO's 17
//     person-keypoint sigmas);
//   --iou-type panoptic --gt panoptic.json --gt-dir PNGS --results pred.json --results-dir PNGS:
//     panopticapi's pq_compute;
//   --iou-type sem_seg --gt-dir LABEL_PNGS --results-dir PRED_PNGS --num-classes N
//     [--ignore-value 255]: Detectron2's SemSegEvaluator metrics, each prediction PNG scored
//     against the ground-truth PNG of the same name.
//   --iou-type bbox|segm with an LVIS --gt (images with neg_category_ids, categories with a
//     frequency): lvis-api's LVISEval (tools/evaluate_lvis.cpp).
//   --voc-dir VOCdevkit/VOC2007 --split test --results DIR [--voc-metric 11point|area]: Pascal VOC
//     AP of per-class <class>.txt files as Detectron2's PascalVOCDetectionEvaluator
//     (evaluate_voc.h).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "detkit/data/coco/coco.h"
#include "detkit/evaluation/coco_report.h"
#include "detkit/evaluation/lvis_ground_truth.h"
#include "detkit/evaluation/panoptic_report.h"
#include "detkit/evaluation/sem_seg_evaluation.h"
#include "detkit/utils/error.h"
#include "tools/commands.h"
#include "tools/evaluate_lvis.h"
#include "tools/evaluate_voc.h"

namespace detkit::tools {
namespace {

struct EvaluateOptions {
  std::string gt, results, iou_type = "bbox", gt_dir, results_dir;
  int64_t num_classes = 0, ignore_value = 255;
  bool json = false;
  VocEvaluateOptions voc{"", "test"};
};

void require(const std::string& value, const char* flag, const std::string& iou_type) {
  if (value.empty()) throw Error(std::string("evaluate --iou-type ") + iou_type + " needs " + flag);
}

int evaluate_coco(const EvaluateOptions& o) {
  require(o.gt, "--gt", o.iou_type);
  require(o.results, "--results", o.iou_type);
  auto type = evaluation::parse_iou_type(o.iou_type);
  data::CocoDataset dataset = data::load_coco_json(o.gt, /*image_root=*/"");
  auto gt = evaluation::ground_truth_from_dataset(dataset, type);
  auto detections = evaluation::load_coco_results(o.results, type, gt.ids);
  auto report = evaluation::evaluate_coco(gt, std::move(detections), type);
  if (o.json) {
    std::cout << evaluation::report_json(report) << "\n";
  } else {
    std::cout << report.summary << evaluation::detectron2_tables(report, gt.category_names);
  }
  return 0;
}

int evaluate_panoptic(const EvaluateOptions& o) {
  for (const auto& [value, flag] :
       {std::pair{o.gt, "--gt"}, std::pair{o.gt_dir, "--gt-dir"}, std::pair{o.results, "--results"},
        std::pair{o.results_dir, "--results-dir"}})
    require(value, flag, o.iou_type);
  for (const auto& [folder, flag] :
       {std::pair{o.gt_dir, "--gt-dir"}, std::pair{o.results_dir, "--results-dir"}})
    if (!std::filesystem::is_directory(folder))
      throw Error(std::string(flag) + " " + folder + ": no such folder");
  const auto gt = evaluation::load_panoptic_json(o.gt, /*ground_truth=*/true);
  const auto predictions = evaluation::load_panoptic_json(o.results, /*ground_truth=*/false);
  const auto result = evaluation::pq_compute(
      gt, o.gt_dir, predictions.annotations, [&](const evaluation::PanopticAnnotation& p) {
        return evaluation::read_panoptic_png(o.results_dir + "/" + p.file_name);
      });
  if (o.json) {
    std::cout << evaluation::pq_result_json(result) << "\n";
    return 0;
  }
  std::map<int64_t, std::string> names;
  for (const auto& c : gt.categories) names[c.id] = c.name;
  std::cout << evaluation::panoptic_results_table(result) << "\n\n"
            << evaluation::panoptic_per_category_table(result, names);
  return 0;
}

int evaluate_sem_seg(const EvaluateOptions& o) {
  require(o.gt_dir, "--gt-dir", o.iou_type);
  require(o.results_dir, "--results-dir", o.iou_type);
  if (o.num_classes < 1) throw Error("evaluate --iou-type sem_seg needs --num-classes N (N >= 1)");
  if (!std::filesystem::is_directory(o.results_dir))
    throw Error("--results-dir " + o.results_dir + ": no such folder");
  std::vector<std::filesystem::path> predictions;
  for (const auto& entry : std::filesystem::directory_iterator(o.results_dir))
    if (entry.path().extension() == ".png") predictions.push_back(entry.path());
  if (predictions.empty()) throw Error("--results-dir " + o.results_dir + " holds no .png file");
  std::sort(predictions.begin(), predictions.end());
  std::vector<std::string> class_names;
  for (int64_t i = 0; i < o.num_classes; ++i) class_names.push_back(std::to_string(i));
  evaluation::SemSegEvaluator evaluator(class_names, o.ignore_value, /*output_dir=*/"",
                                        std::nullopt, /*boundary_iou=*/false);
  for (const auto& prediction : predictions) {
    const std::string gt = (std::filesystem::path(o.gt_dir) / prediction.filename()).string();
    if (!std::filesystem::exists(gt))
      throw Error("prediction " + prediction.string() + " has no ground truth: " + gt +
                  " does not exist");
    evaluator.process(prediction.string(), evaluation::read_label_png(gt),
                      evaluation::read_label_png(prediction.string()), gt);
  }
  const auto metrics = evaluator.metrics();
  if (o.json) {
    std::cout << evaluation::sem_seg_metrics_json(metrics) << "\n";
  } else {
    std::cout << predictions.size() << " images\n"
              << evaluation::sem_seg_metrics_table(metrics, class_names);
  }
  return 0;
}

}  // namespace

CommandRunner add_evaluate_command(CLI::App& app) {
  auto o = std::make_shared<EvaluateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "evaluate",
      "Score results against ground truth: COCO AP/AR (pycocotools' COCOeval), panoptic quality "
      "(panopticapi's pq_compute) or semantic segmentation (Detectron2's SemSegEvaluator)");
  cmd->add_option("--gt", o->gt,
                  "ground truth: COCO or LVIS instances JSON, or COCO panoptic JSON");
  cmd->add_option("--results", o->results,
                  "results: a COCO results JSON (a list of detections), or a COCO panoptic JSON");
  cmd->add_option("--iou-type", o->iou_type,
                  "bbox, segm, keypoints (OKS, COCO's sigmas), panoptic or sem_seg")
      ->check(CLI::IsMember({"bbox", "segm", "keypoints", "panoptic", "sem_seg"}));
  cmd->add_option("--gt-dir", o->gt_dir,
                  "panoptic: the ground truth's PNG folder; sem_seg: the label PNG folder");
  cmd->add_option("--results-dir", o->results_dir,
                  "panoptic: the predictions' PNG folder; sem_seg: predicted class PNGs, each "
                  "named as its ground-truth PNG");
  cmd->add_option("--num-classes", o->num_classes, "sem_seg: the number of classes");
  cmd->add_option("--ignore-value", o->ignore_value,
                  "sem_seg: the ground truth's unlabelled value (default 255)");
  cmd->add_option("--voc-dir", o->voc.voc_dir,
                  "Pascal VOC: the VOC<year> folder (Annotations/, ImageSets/Main/); --results is "
                  "then a folder of <class>.txt files");
  cmd->add_option("--split", o->voc.split, "Pascal VOC: ImageSets/Main/<split>.txt (default test)");
  cmd->add_option("--voc-metric", o->voc.metric,
                  "Pascal VOC: 11point or area (default: 11point for VOC2007, area otherwise)")
      ->check(CLI::IsMember({"11point", "area"}));
  cmd->add_flag("--json", o->json,
                "print JSON instead of tables: {\"stats\", \"per_category_ap\"} (COCO), "
                "{\"All\", \"Things\", \"Stuff\", \"per_category\"} (panoptic, fractions), "
                "{\"mIoU\", \"fwIoU\", \"mACC\", \"pACC\", \"IoU\", \"ACC\"} (sem_seg, percent), "
                "{\"bbox\": {\"AP\", \"AP50\", \"AP75\"}} (Pascal VOC, percent)");
  cmd->footer(
      "Examples:\n"
      "  detkit evaluate --gt datasets/coco/annotations/instances_val2017.json "
      "--results output/inference/coco_instances_results.json --iou-type segm\n"
      "  detkit evaluate --iou-type panoptic --gt datasets/coco/annotations/panoptic_val2017.json "
      "--gt-dir datasets/coco/panoptic_val2017 --results output/inference/predictions.json "
      "--results-dir output/inference/predictions\n"
      "  detkit evaluate --iou-type sem_seg --gt-dir labels/ --results-dir predicted/ "
      "--num-classes 81\n"
      "  detkit evaluate --voc-dir datasets/VOC2007 --split test --results "
      "output/inference/pascal_voc_results --json\n");
  return [cmd, o]() {
    if (!*cmd) return -1;
    if (!o->voc.voc_dir.empty()) {
      o->voc.results_dir = o->results;
      o->voc.json = o->json;
      return evaluate_voc(o->voc);
    }
    if (o->iou_type == "panoptic") return evaluate_panoptic(*o);
    if (o->iou_type == "sem_seg") return evaluate_sem_seg(*o);
    if ((o->iou_type == "bbox" || o->iou_type == "segm") && !o->gt.empty() &&
        evaluation::is_lvis_json(o->gt))
      return evaluate_lvis(o->gt, o->results, o->iou_type, o->json);
    return evaluate_coco(*o);
  };
}

}  // namespace detkit::tools
