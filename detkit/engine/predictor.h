#pragma once
// DefaultPredictor (Detectron2's): a config's model with MODEL.WEIGHTS loaded, in eval mode,
// and the test-time preprocessing, as one object. Call it on a BGR image (OpenCV's order, the
// way Detectron2's predictor takes cv2 images) or an image file; it returns the detections in
// the original image's pixels.
//
//   detkit::engine::DefaultPredictor predictor(cfg);         // cfg: get_cfg() + YAML + weights
//   structures::Instances found = predictor("image.jpg");    // pred_boxes, scores, pred_classes
#include <memory>
#include <opencv2/core/mat.hpp>
#include <string>

#include "detkit/config/cfg_node.h"
#include "detkit/data/dataset_mapper.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/solver/amp.h"

namespace detkit::engine {

class DefaultPredictor {
 public:
  /// Builds MODEL.META_ARCHITECTURE on MODEL.DEVICE and loads MODEL.WEIGHTS (a detkit or
  /// Detectron2 checkpoint, or a state dict); an empty MODEL.WEIGHTS is a detkit::Error. With
  /// SOLVER.AMP.ENABLED the model runs under autocast in SOLVER.AMP.PRECISION (detections come
  /// back in fp32).
  explicit DefaultPredictor(const config::CfgNode& cfg);

  /// `bgr`: 8-bit, 3 channels, BGR. Resized as INPUT.MIN_SIZE_TEST / MAX_SIZE_TEST say, in
  /// INPUT.FORMAT channel order; "pred_boxes" etc. come back in `bgr`'s own pixels. Anything
  /// else than a non-empty 8-bit 3-channel image is a detkit::Error.
  structures::Instances operator()(const cv::Mat& bgr);
  /// Reads `image_file` (EXIF orientation applied) and predicts on it.
  structures::Instances operator()(const std::string& image_file);
  /// Everything the model gives for `bgr` (Detectron2's output dict: instances, sem_seg,
  /// panoptic_seg), in `bgr`'s own pixels. operator() is its instances, and an error naming the
  /// model for one that predicts none (SemanticSegmentor).
  structures::ModelOutput outputs(const cv::Mat& bgr);

  /// The model's input for `bgr`, as the test mapper makes it.
  structures::ModelInput preprocess(const cv::Mat& bgr) const;
  modeling::MetaArch& model() { return *model_; }

 private:
  std::shared_ptr<modeling::MetaArch> model_;
  data::DatasetMapperOptions mapper_;
  solver::AmpOptions amp_;  // SOLVER.AMP.ENABLED: inference under autocast
};

}  // namespace detkit::engine
