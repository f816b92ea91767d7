#pragma once
// A scope under autocast on one device type, as Python's `with torch.autocast("cpu" or "cuda",
// dtype=...)`: convolutions,
// linear layers and matmuls run in `dtype`, the ops libtorch lists as precision-sensitive
// (losses, conv_transpose, ...) in fp32, and detkit's own ops by their rules
// (ops/autocast/autocast_rules.cpp: computed in fp32). Autocast is thread-local; the guard
// changes only the calling thread's state and restores it when the scope ends, clearing the cast
// cache when the outermost autocast scope ends. `enabled = false` turns autocast off inside the
// scope (a region that must stay fp32 inside an autocast one).
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace detkit {

class AutocastGuard {
 public:
  /// `device`: the device type whose autocast is set (the model's: CPU or CUDA).
  explicit AutocastGuard(bool enabled, c10::ScalarType dtype = c10::kBFloat16,
                         c10::DeviceType device = c10::DeviceType::CPU);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool previous_enabled_;
  c10::ScalarType previous_dtype_;
  bool previous_cache_enabled_;
};

}  // namespace detkit
