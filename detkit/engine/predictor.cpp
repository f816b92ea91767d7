#include "detkit/engine/predictor.h"

#include <ATen/ATen.h>

#include <opencv2/imgproc.hpp>

#include "detkit/checkpoint/checkpointer.h"
#include "detkit/data/image/image_io.h"
#include "detkit/utils/autocast.h"
#include "detkit/utils/error.h"

namespace detkit::engine {

DefaultPredictor::DefaultPredictor(const config::CfgNode& cfg)
    : model_(modeling::build_model(cfg)),
      mapper_(data::dataset_mapper_options_from_config(cfg, /*is_train=*/false)),
      amp_(solver::amp_options_from_config(cfg)) {
  const std::string weights = cfg.get_string("MODEL.WEIGHTS");
  if (weights.empty())
    throw Error("DefaultPredictor: MODEL.WEIGHTS is empty; a predictor needs trained weights");
  checkpoint::Checkpointer(model_, "", /*save_to_disk=*/false).resume_or_load(weights, false);
  model_->eval();
}

structures::ModelInput DefaultPredictor::preprocess(const cv::Mat& bgr) const {
  if (bgr.empty() || bgr.depth() != CV_8U || bgr.channels() != 3)
    throw Error("DefaultPredictor: the image must be 8-bit with 3 channels (BGR), got " +
                std::to_string(bgr.cols) + "x" + std::to_string(bgr.rows) + " with " +
                std::to_string(bgr.channels()) + " channels of depth " +
                std::to_string(bgr.depth()));
  data::SampleRng rng(0, 0);  // test-time augmentations draw nothing
  data::TransformList transforms =
      data::apply_augmentations(mapper_.augmentations, bgr.rows, bgr.cols, rng);
  cv::Mat image = bgr;
  if (mapper_.image_format == "RGB") cv::cvtColor(bgr, image, cv::COLOR_BGR2RGB);
  structures::ModelInput input;
  input.image = data::image_to_tensor(transforms.apply_image(image));
  input.height = bgr.rows;
  input.width = bgr.cols;
  return input;
}

structures::Instances DefaultPredictor::operator()(const cv::Mat& bgr) {
  at::InferenceMode inference_mode;
  const AutocastGuard autocast(amp_.enabled, amp_.precision, amp_.device);
  return model_->inference({preprocess(bgr)}).at(0);
}

structures::ModelOutput DefaultPredictor::outputs(const cv::Mat& bgr) {
  at::InferenceMode inference_mode;
  const AutocastGuard autocast(amp_.enabled, amp_.precision, amp_.device);
  return model_->outputs({preprocess(bgr)}).at(0);
}

structures::Instances DefaultPredictor::operator()(const std::string& image_file) {
  return (*this)(data::read_image(image_file, "BGR"));
}

}  // namespace detkit::engine
