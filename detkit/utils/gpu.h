#pragma once
// What timing and memory figures need from the current GPU, without CUDA headers in the caller:
// waiting for its queued work, and the peak of memory its tensors held. Each is a no-op (or 0)
// in a process that sees no GPU or a detkit built without its CUDA kernels.
#include <memory>
#include <string>

namespace detkit {

/// How long the current GPU waits for the host between training steps, on the GPU's own clock:
/// events mark where each step's GPU work begins (once its batch is ready) and ends (after the
/// optimizer). A step's idle time is the gap from the previous step's end to its beginning: the
/// GPU had finished and nothing new was queued (the data, hooks, logging); waits inside a step
/// (a host synchronisation) are not counted. Inactive (every call a no-op, idle_share() -1)
/// unless made for a CUDA device.
class GpuStepClock {
 public:
  explicit GpuStepClock(bool on_gpu);
  ~GpuStepClock();
  void step_begins();
  void step_ends();
  /// The previous step's idle share, gap / (gap + its work's span), once the GPU has finished
  /// it (read without waiting); -1 until then or when inactive.
  double idle_share();

 private:
  struct Events;
  std::unique_ptr<Events> events_;
};

/// Blocks until the current CUDA device has finished its queued work (a clock read after it
/// times the work, not its launch).
void synchronize_gpu();

/// The most memory the current CUDA device's tensors have held at once since the process began
/// or the last reset_peak_gpu_memory(), in MiB (torch.cuda.max_memory_allocated()); 0 without.
double peak_gpu_memory_mb();

/// Starts peak_gpu_memory_mb() afresh (torch.cuda.reset_peak_memory_stats()).
void reset_peak_gpu_memory();

/// The current GPU and its memory, for an out-of-memory error: "GPU 0 NVIDIA H100 80GB HBM3,
/// 79.2 GiB: its tensors held at most 75.3 GiB"; "no GPU visible" without one.
std::string gpu_memory_report();

}  // namespace detkit
