#pragma once
// COCOPanopticEvaluator: Detectron2's panoptic evaluator. process() keeps each image's panoptic
// prediction as Detectron2 does — the id map as an RGB PNG (panopticapi's id2rgb) and its
// segments_info with category ids turned from the model's contiguous thing / stuff classes into
// the dataset's — and evaluate() gathers them to rank 0, writes OUTPUT_DIR/predictions.json (the
// ground-truth JSON with the predictions as its annotations) and the PNGs beside it in
// OUTPUT_DIR/predictions/ (panopticapi's default folder for that file; Detectron2 keeps them in a
// temporary folder), and scores them with pq_compute against the dataset's panoptic JSON and PNG
// folder: PQ, SQ, RQ for All, Things and Stuff (x100), and Detectron2's table in the log.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "detkit/evaluation/coco_report.h"
#include "detkit/evaluation/panoptic_json.h"
#include "detkit/evaluation/panoptic_quality.h"
#include "detkit/structures/model_io.h"

namespace detkit::evaluation {

class COCOPanopticEvaluator {
 public:
  /// panoptic_json, panoptic_root: the dataset's panoptic ground truth (MetadataCatalog's
  /// panoptic_json and panoptic_root); thing_contiguous_id_to_dataset_id and
  /// stuff_contiguous_id_to_dataset_id: the inverses of thing_ / stuff_dataset_id_to_contiguous_id;
  /// output_dir "" writes no file.
  COCOPanopticEvaluator(std::string panoptic_json, std::string panoptic_root,
                        std::map<int64_t, int64_t> thing_contiguous_id_to_dataset_id,
                        std::map<int64_t, int64_t> stuff_contiguous_id_to_dataset_id,
                        std::string output_dir);

  /// file_name: the image's file; its prediction is stored as <stem>.png. output: the model's
  /// panoptic_seg (id map (H, W) int32, segments with contiguous category ids).
  void process(int64_t image_id, const std::string& file_name,
               const structures::PanopticOutput& output);

  /// {"panoptic_seg": report} with PQ, SQ, RQ, PQ_th, ..., RQ_st in report.results, on rank 0;
  /// the other ranks of a job return nothing. Every rank must call it.
  std::map<std::string, CocoEvalReport> evaluate();

  /// pq_compute's result of the last evaluate() on rank 0.
  const std::optional<PQResult>& pq_result() const { return pq_result_; }
  size_t num_predictions() const { return predictions_.size(); }

 private:
  struct Prediction {
    PanopticAnnotation annotation;  // image_id, <stem>.png, segments with dataset category ids
    std::string segments_json;      // segments_info as written (Detectron2's keys)
    std::string png;
  };
  void gather();
  void write_predictions() const;

  std::string panoptic_json_, panoptic_root_;
  std::map<int64_t, int64_t> thing_to_dataset_id_, stuff_to_dataset_id_;
  std::string output_dir_;
  std::vector<Prediction> predictions_;
  std::optional<PQResult> pq_result_;
};

}  // namespace detkit::evaluation
