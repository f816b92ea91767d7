#pragma once
// Loss scaling for mixed-precision training, with the arithmetic of PyTorch's GradScaler (1.13):
// backward runs on loss x scale, so that small gradients survive reduced precision; before the
// optimizer steps, every gradient is multiplied by 1/scale (the reciprocal taken in double, then
// rounded to float, as PyTorch does) and checked: one inf or NaN skips the step. A dynamic scale
// then halves (backoff_factor) and starts counting again; growth_interval clean steps in a row
// double it (growth_factor; a product that is not finite leaves it). A static scale (the seed
// port's 64) never changes; its overflowing steps are skipped all the same.
// The state is PyTorch's GradScaler.state_dict(): scale, growth_factor, backoff_factor,
// growth_interval, _growth_tracker (Detectron2 saves it as the checkpoint's "grad_scaler").
#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <vector>

namespace detkit::solver {

struct GradScalerOptions {
  TORCH_ARG(double, init_scale) = 65536.0;  // 2^16
  TORCH_ARG(double, growth_factor) = 2.0;
  TORCH_ARG(double, backoff_factor) = 0.5;
  TORCH_ARG(int64_t, growth_interval) = 2000;
  TORCH_ARG(bool, dynamic) = true;  // false: init_scale for ever
};

/// PyTorch's GradScaler.state_dict(), field for field.
struct GradScalerState {
  double scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  int64_t growth_tracker = 0;  // clean steps in a row since the last change
};

class GradScaler {
 public:
  /// Throws detkit::Error for a scale that is not a positive finite number, a growth factor
  /// not above 1, a backoff factor outside (0, 1) or a growth interval below 1.
  explicit GradScaler(const GradScalerOptions& options = {});

  /// loss x scale (in the loss's dtype), the tensor to call backward on.
  at::Tensor scale_loss(const at::Tensor& loss) const;
  /// Multiplies every defined gradient of `params` by 1/scale in place, in one pass each; returns
  /// whether any element of any of them is inf or NaN.
  bool unscale_(const std::vector<at::Tensor>& params) const;
  /// After the step (taken or skipped): the dynamic schedule above; nothing when static.
  void update(bool found_inf);

  double scale() const { return scale_; }
  int64_t growth_tracker() const { return growth_tracker_; }
  bool dynamic() const { return options_.dynamic(); }

  GradScalerState state_dict() const;
  /// Restores a dynamic scaler's scale, factors, interval and tracker (checked as the
  /// constructor checks them: detkit::Error naming the field). A static scaler keeps its
  /// configured scale: SOLVER.AMP.LOSS_SCALE decides it, not the checkpoint.
  void load_state_dict(const GradScalerState& state);

 private:
  GradScalerOptions options_;
  float scale_;  // PyTorch keeps the scale in a float32 tensor
  int64_t growth_tracker_ = 0;
};

}  // namespace detkit::solver
