#include "detkit/layers/norm_input_recorder.h"

#include <ATen/core/Tensor.h>

namespace detkit::layers {

namespace {
thread_local NormInputRecorder* open_recorder = nullptr;
}  // namespace

NormInputRecorder::NormInputRecorder() : outer_(open_recorder) { open_recorder = this; }

NormInputRecorder::~NormInputRecorder() { open_recorder = outer_; }

void record_norm_input(const torch::nn::Module& norm, const at::Tensor& input) {
  if (open_recorder == nullptr) return;
  const int64_t channels = input.dim() >= 2 ? input.size(1) : 0;
  open_recorder->calls_[&norm].push_back(channels > 0 ? input.numel() / channels : 0);
}

}  // namespace detkit::layers
