#pragma once
// NaiveSyncBatchNorm2d: BatchNorm whose training statistics are those of the global batch over
// every rank (Detectron2's NaiveSyncBatchNorm, what "SyncBN", "naiveSyncBN" and "naiveSyncBN_N"
// build here: torch's nn.SyncBatchNorm is CUDA-only). The per-channel mean and mean of squares
// are averaged over the ranks by an all-reduce that is differentiable, so the gradients flow
// through the other ranks' images as they would through one batch. In eval mode, or in a world
// of one, it is BatchNorm2d, with its state names (weight, bias,
// running_mean, running_var, num_batches_tracked) and the same optimizer treatment (a norm
// layer for SOLVER.WEIGHT_DECAY_NORM).
//
// As Detectron2's: the running variance is updated with the biased batch variance
// (E[x²] − E[x]²), where BatchNorm2d uses the unbiased one.
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <ostream>

namespace detkit::layers {

class NaiveSyncBatchNorm2dImpl : public torch::nn::Module {
 public:
  /// per_rank_average: "" mode, every rank's statistics weigh the same (each must hold at least
  /// one image); false: "N" mode, weighed by each rank's batch size (ranks may hold none).
  explicit NaiveSyncBatchNorm2dImpl(int64_t num_features, bool per_rank_average = true,
                                    double eps = 1e-5, double momentum = 0.1);
  at::Tensor forward(const at::Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  /// The running statistics' update factor (BatchNorm2d's momentum); precise BN sets it to 1 while
  /// it measures each batch's statistics (engine/precise_bn.h).
  double momentum() const { return momentum_; }
  void set_momentum(double momentum) { momentum_ = momentum; }

  // BatchNorm2d's parameters and buffers, under its names.
  at::Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  int64_t num_features_;
  bool per_rank_average_;
  double eps_, momentum_;
};
TORCH_MODULE(NaiveSyncBatchNorm2d);

/// The sum over all ranks of `x` (every rank calls it with the same shape), differentiable: the
/// gradient is the sum over the ranks of theirs (Detectron2's differentiable_all_reduce).
at::Tensor differentiable_all_reduce_sum(const at::Tensor& x);

}  // namespace detkit::layers
