#pragma once
// How many values per channel each norm layer normalised in a forward pass: what precise
// BatchNorm (engine/precise_bn.h) needs to weigh each batch's statistics and to turn a running
// variance back into the batch's own. fvcore takes it in a forward pre-hook; libtorch modules have
// no hooks, so layers::Conv2d, which runs every norm layer of detkit's models, reports each norm
// it runs to the NormInputRecorder open on its thread, if any. Outside a recorder nothing is kept.
#include <torch/nn/module.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace detkit::layers {

class NormInputRecorder {
 public:
  NormInputRecorder();  // opens on this thread (recorders nest: the innermost records)
  ~NormInputRecorder();
  NormInputRecorder(const NormInputRecorder&) = delete;
  NormInputRecorder& operator=(const NormInputRecorder&) = delete;

  /// By norm layer: its input's values per channel (numel / channels) at each call since the
  /// last clear(), in call order.
  const std::unordered_map<const torch::nn::Module*, std::vector<int64_t>>& calls() const {
    return calls_;
  }
  void clear() { calls_.clear(); }

 private:
  std::unordered_map<const torch::nn::Module*, std::vector<int64_t>> calls_;
  NormInputRecorder* outer_;
  friend void record_norm_input(const torch::nn::Module&, const at::Tensor&);
};

/// Tells the recorder open on this thread, if any, that `norm` runs on `input` (N, C, ...).
void record_norm_input(const torch::nn::Module& norm, const at::Tensor& input);

}  // namespace detkit::layers
