#include "detkit/utils/gpu.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <fmt/format.h>

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

}  // namespace detkit
