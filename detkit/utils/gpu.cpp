#include "detkit/utils/gpu.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#if DETKIT_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "detkit/utils/cuda_build.h"

namespace detkit {

void synchronize_gpu() {
  if (visible_gpu_count() == 0) return;
  const auto& hooks = at::detail::getCUDAHooks();
  hooks.deviceSynchronize(hooks.current_device());
}

double peak_gpu_memory_mb() {
#if DETKIT_WITH_CUDA
  if (visible_gpu_count() == 0) return 0;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
  const auto& bytes =
      stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  return static_cast<double>(bytes.peak) / (1024.0 * 1024.0);
#else
  return 0;
#endif
}

std::string gpu_memory_report() {
  const CudaBuild build = cuda_build();
  if (build.gpus.empty()) return "no GPU visible";
  const int current = at::detail::getCUDAHooks().current_device();
  const GpuInfo& g = build.gpus.at(current >= 0 ? current : 0);
  return fmt::format("GPU {} {}, {:.1f} GiB: its tensors held at most {:.1f} GiB", g.index, g.name,
                     static_cast<double>(g.memory) / (1024.0 * 1024.0 * 1024.0),
                     peak_gpu_memory_mb() / 1024.0);
}

void reset_peak_gpu_memory() {
#if DETKIT_WITH_CUDA
  if (visible_gpu_count() > 0)
    c10::cuda::CUDACachingAllocator::resetPeakStats(c10::cuda::current_device());
#endif
}

// Three timed events in a ring: the previous step's end, this step's beginning and end.
struct GpuStepClock::Events {
  c10::impl::VirtualGuardImpl guard{c10::DeviceType::CUDA};
  std::optional<c10::Event> previous_end, begin, end;
  bool measured = true;  // the last idle_share() read the current step

  c10::Stream stream() const {
    return guard.getStream(c10::Device(c10::DeviceType::CUDA, guard.getDevice().index()));
  }
  static c10::Event timed() {
    return c10::Event(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  }
};

GpuStepClock::GpuStepClock(bool on_gpu) {
  if (on_gpu && visible_gpu_count() > 0) events_ = std::make_unique<Events>();
}

GpuStepClock::~GpuStepClock() = default;

void GpuStepClock::step_begins() {
  if (!events_) return;
  events_->previous_end = std::move(events_->end);
  events_->end.reset();
  events_->begin.emplace(Events::timed());
  events_->begin->record(events_->stream());
  events_->measured = false;
}

void GpuStepClock::step_ends() {
  if (!events_ || !events_->begin) return;
  events_->end.emplace(Events::timed());
  events_->end->record(events_->stream());
}

double GpuStepClock::idle_share() {
  if (!events_ || events_->measured || !events_->previous_end || !events_->begin || !events_->end ||
      !events_->end->query())
    return -1;
  events_->measured = true;
  const double gap = std::max(0.0, events_->previous_end->elapsedTime(*events_->begin));
  const double work = events_->begin->elapsedTime(*events_->end);
  return gap + work > 0 ? gap / (gap + work) : 0;
}

}  // namespace detkit
