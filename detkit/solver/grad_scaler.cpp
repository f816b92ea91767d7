#include "detkit/solver/grad_scaler.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

void check(const GradScalerState& s, const char* where) {
  auto bad = [&](const std::string& what) {
    throw Error(fmt::format("{}: {}", where, what));
  };
  if (!(std::isfinite(s.scale) && s.scale > 0))
    bad(fmt::format("scale must be a positive finite number, got {}", s.scale));
  if (!(s.growth_factor > 1) || !std::isfinite(s.growth_factor))
    bad(fmt::format("growth_factor must be above 1, got {}", s.growth_factor));
  if (!(s.backoff_factor > 0 && s.backoff_factor < 1))
    bad(fmt::format("backoff_factor must be in (0, 1), got {}", s.backoff_factor));
  if (s.growth_interval < 1)
    bad(fmt::format("growth_interval must be at least 1, got {}", s.growth_interval));
  if (s.growth_tracker < 0)
    bad(fmt::format("_growth_tracker must not be negative, got {}", s.growth_tracker));
}

// g *= inv in place over `n` floats; whether any product is inf or NaN. One pass, vectorisable
// (an integer OR reduction), split over the intra-op threads.
bool unscale_floats(float* g, int64_t n, float inv) {
  std::atomic<bool> found{false};
  at::parallel_for(0, n, 1 << 15, [&](int64_t begin, int64_t end) {
    int bad = 0;
    for (int64_t i = begin; i < end; ++i) {
      const float x = g[i] * inv;
      g[i] = x;
      bad |= !(std::fabs(x) <= std::numeric_limits<float>::max());  // inf, or NaN (false compare)
    }
    if (bad) found = true;
  });
  return found;
}

}  // namespace

GradScaler::GradScaler(const GradScalerOptions& options) : options_(options) {
  GradScalerState s{options.init_scale(), options.growth_factor(), options.backoff_factor(),
                    options.growth_interval(), 0};
  check(s, "loss scaler");
  scale_ = static_cast<float>(options.init_scale());
  if (!std::isfinite(scale_))
    throw Error(fmt::format("loss scaler: scale {} does not fit a float", options.init_scale()));
}

at::Tensor GradScaler::scale_loss(const at::Tensor& loss) const { return loss * scale_; }

bool GradScaler::unscale_(const std::vector<at::Tensor>& params) const {
  const float inv = static_cast<float>(1.0 / static_cast<double>(scale_));
  bool found = false;
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> on_gpu;  // unscaled together below
  for (const at::Tensor& p : params) {
    const at::Tensor& g = p.grad();
    if (!g.defined()) continue;
    if (g.scalar_type() == at::kFloat && g.is_contiguous() && g.device().is_cpu()) {
      found |= unscale_floats(g.data_ptr<float>(), g.numel(), inv);
    } else if (g.is_cuda() && (g.scalar_type() == at::kFloat || g.scalar_type() == at::kHalf ||
                               g.scalar_type() == at::kBFloat16)) {
      on_gpu.push_back(g);
    } else {  // other dtypes and layouts: the same, in two ATen passes
      g.mul_(inv);
      found |= !at::isfinite(g).all().item<bool>();
    }
  }
  if (!on_gpu.empty()) {
    // PyTorch's GradScaler kernel on the GPU: every gradient unscaled and checked in one fused
    // launch per device and dtype group, then one synchronisation for the flag (as Detectron2's).
    const at::TensorOptions options = on_gpu[0].options().dtype(at::kFloat);
    at::Tensor found_inf = at::zeros({1}, options);
    at::_amp_foreach_non_finite_check_and_unscale_(on_gpu, found_inf, at::full({1}, inv, options));
    found |= found_inf.item<float>() != 0;
  }
  return found;
}

void GradScaler::update(bool found_inf) {
  if (!options_.dynamic()) return;
  // PyTorch's _amp_update_scale_.
  if (found_inf) {
    scale_ = static_cast<float>(scale_ * options_.backoff_factor());
    growth_tracker_ = 0;
    return;
  }
  if (++growth_tracker_ == options_.growth_interval()) {
    const float grown = static_cast<float>(scale_ * options_.growth_factor());
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  }
}

GradScalerState GradScaler::state_dict() const {
  return {scale_, options_.growth_factor(), options_.backoff_factor(), options_.growth_interval(),
          growth_tracker_};
}

void GradScaler::load_state_dict(const GradScalerState& state) {
  check(state, "checkpoint entry 'grad_scaler'");
  if (!options_.dynamic()) return;
  options_.growth_factor(state.growth_factor)
      .backoff_factor(state.backoff_factor)
      .growth_interval(state.growth_interval);
  scale_ = static_cast<float>(state.scale);
  growth_tracker_ = state.growth_tracker;
}

}  // namespace detkit::solver
