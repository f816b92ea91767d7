#pragma once
// Precise BatchNorm (Detectron2's PreciseBN hook, TEST.PRECISE_BN; fvcore's update_bn_stats).
// While training, a BatchNorm layer's running statistics are a moving average over batches that
// met ever-changing weights; before each evaluation this hook recomputes them with the weights
// fixed, from TEST.PRECISE_BN.NUM_ITER training batches run through the model in training mode
// without gradients.
//
// What it computes, as the fvcore Detectron2 pins (0.1.5, whose estimator since 2021 is the
// population's): for each layer, the mean and the biased variance of every value it normalised
// over the NUM_ITER batches taken together, each batch weighing its values per channel (N*H*W).
// Each batch's mean and variance are read from the layer's running statistics with its momentum
// set to 1 for the pass; BatchNorm keeps the unbiased variance there, which is turned back into
// the batch's own (times (n-1)/n). Where detkit differs, in corner cases fvcore does not handle:
//   - SyncBN with several ranks: its running variance is already the global batch's biased one
//     (sync_batch_norm.h), and each batch weighs its values summed over the ranks (one
//     all-reduce per batch), so every rank ends with the same statistics; fvcore weighs by this
//     rank's values and corrects the variance once more.
//   - A layer no batch reached keeps its statistics (fvcore writes zeros), with a warning.
//   - The sums are kept in float64.
// Plain BN stays per rank with several ranks: each rank computes its statistics from its own
// batches, as in Detectron2 (whose DDP does not broadcast buffers); rank 0's are checkpointed.
// Other state a training forward changes changes too (RetinaNet's loss normaliser), as in
// Detectron2; the scalars a model records are discarded (no EventScalarScope is open).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/engine/trainer.h"
#include "detkit/solver/amp.h"

namespace detkit::engine {

/// The layers precise BN updates (fvcore's get_bn_modules), by name ("" for `model` itself):
/// those in training mode of BatchNorm1d/2d/3d with running statistics and NaiveSyncBatchNorm2d
/// (what NORM "BN", "SyncBN", "naiveSyncBN" and "naiveSyncBN_N" build). FrozenBatchNorm2d and
/// GroupNorm are not BatchNorm layers.
std::vector<std::string> bn_layer_names(torch::nn::Module& model);

/// fvcore's update_bn_stats: runs `forward(k)` for k = 0 .. num_iter - 1 (one training batch
/// through `model` each, with the BatchNorm layers above in training mode, as they are found
/// before) without gradients, then writes into each layer's running_mean and running_var the
/// statistics described at the top. Momenta are restored, also when `forward` throws; parameters
/// and gradients are untouched; num_batches_tracked counts the batches, as BatchNorm does. The
/// values per channel each layer normalised come from layers::NormInputRecorder: a BatchNorm layer
/// that ran outside layers::Conv2d, or twice in one forward, is a detkit::Error naming it.
/// Nothing happens without BatchNorm layers.
void update_bn_stats(torch::nn::Module& model, const std::function<void(int64_t)>& forward,
                     int64_t num_iter);

/// The same with the model's training losses of `num_iter` batches of `batches` (Detectron2 calls
/// model(inputs)), under autocast where `amp` is enabled (as detkit evaluates).
void update_bn_stats(modeling::MetaArch& model, const BatchSource& batches, int64_t num_iter,
                     const solver::AmpOptions& amp = {});

/// Detectron2's PreciseBN hook: update_bn_stats after every `period`-th iteration (0: never
/// during training) and after the last one. Registered before the checkpointer and the
/// evaluation (TEST.EVAL_PERIOD is its period), so that both see the new statistics.
class PreciseBN : public HookBase {
 public:
  /// make_batches: the stream of training batches, made the first time the hook runs and then
  /// shared by every run (each continues where the last stopped), as Detectron2's iterator of a
  /// second train loader.
  PreciseBN(int64_t period, int64_t num_iter, std::function<BatchSource()> make_batches,
            solver::AmpOptions amp = {});
  void after_step(Trainer& t) override;
  /// One update of `model` now (Detectron2's update_stats).
  void update_stats(modeling::MetaArch& model);

 private:
  int64_t period_, num_iter_;
  std::function<BatchSource()> make_batches_;
  solver::AmpOptions amp_;
  BatchSource batches_;  // made on the first run
};

/// The hook TEST.PRECISE_BN asks for: nullptr when ENABLED is False, or when `model` has no
/// BatchNorm layer in training mode (said once in the log). Its batches come from a second
/// training loader of `cfg` (DATALOADER.NUM_WORKERS 0, as Detectron2's; a stream of its own
/// seeded from `seed`; padded as the trainer pads, to the global batch where
/// DATALOADER.WORLD_SIZE_INVARIANT), started where the hook's runs before `start_iter` left it,
/// so that a resumed run repeats the uninterrupted one. TEST.PRECISE_BN.NUM_ITER below 1 is a
/// detkit::Error naming the key.
std::shared_ptr<PreciseBN> build_precise_bn_hook(const config::CfgNode& cfg,
                                                 modeling::MetaArch& model, uint64_t seed,
                                                 int64_t start_iter);

}  // namespace detkit::engine
