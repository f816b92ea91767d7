#pragma once
// Validation loss (TEST.VAL_LOSS_PERIOD, detkit's key; 0 = off): every `period` iterations, the
// training losses on DATASETS.TEST, recorded as "validation/<loss>" and "validation/total_loss"
// (means over the batches, and over the ranks), so they reach metrics.json, TensorBoard and
// `detkit plot`. One pass is ceil(images / global batch) batches of the training mapper over the
// test datasets, drawn with a fixed seed: the same images and augmentations every time, so the
// curve shows the model changing, not the sample. The pass changes nothing of training: no
// gradient, the model's buffers (BatchNorm statistics) put back, the random generator restored.
#include <cstdint>
#include <memory>

#include "detkit/config/cfg_node.h"
#include "detkit/engine/trainer.h"

namespace detkit::engine {

class ValidationLossHook : public HookBase {
 public:
  /// `cfg`: the training config (DATASETS.TEST, SOLVER.IMS_PER_BATCH, SOLVER.AMP, SEED, INPUT.*).
  ValidationLossHook(const config::CfgNode& cfg, int64_t period);
  void after_step(Trainer& t) override;

  /// One pass now; returns the mean of each loss (and total_loss) over the pass.
  std::map<std::string, double> validation_losses(modeling::MetaArch& model) const;

 private:
  config::CfgNode cfg_;  // DATASETS.TRAIN replaced by DATASETS.TEST
  int64_t period_;
};

}  // namespace detkit::engine
