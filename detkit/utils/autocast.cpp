#include "detkit/utils/autocast.h"

#include <ATen/autocast_mode.h>

namespace detkit {

AutocastGuard::AutocastGuard(bool enabled, c10::ScalarType dtype, c10::DeviceType device)
    : device_(device),
      previous_enabled_(at::autocast::is_autocast_enabled(device)),
      previous_dtype_(at::autocast::get_autocast_dtype(device)),
      previous_cache_enabled_(at::autocast::is_autocast_cache_enabled()) {
  at::autocast::set_autocast_enabled(device_, enabled);
  at::autocast::set_autocast_dtype(device_, dtype);
  at::autocast::increment_nesting();
  at::autocast::set_autocast_cache_enabled(true);
}

AutocastGuard::~AutocastGuard() {
  // The cache holds the casts of weights made in this region; they are stale once it ends.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_, previous_enabled_);
  at::autocast::set_autocast_dtype(device_, previous_dtype_);
  at::autocast::set_autocast_cache_enabled(previous_cache_enabled_);
}

}  // namespace detkit
