#pragma once
// FLUSH_DENORMAL (detkit's key, on by default; PyTorch's torch.set_flush_denormal is off by
// default): x86's flush-to-zero and denormals-are-zero modes. Subnormal floats (below 1.2e-38)
// take a slow path in Intel CPUs' arithmetic: Detectron2's Mask R-CNN recipe from random weights
// underflows in its box head's gradients, and its training step at 1333x800 ran 1.8x longer
// (docs/BENCHMARKS.md). The modes are per thread (MXCSR), so they are set on every thread detkit
// computes on.
namespace detkit {

/// Sets (or clears) both modes on the calling thread and on each thread of its OpenMP team (the
/// one libtorch's and oneDNN's parallel ops run on), and records the setting for threads
/// detkit starts later (see apply_flush_denormal_to_this_thread). Returns false, changing
/// nothing, on a CPU without the modes (no SSE3).
bool set_flush_denormal(bool on);

/// The process's setting (false until set_flush_denormal(true)).
bool flush_denormal();

/// For a thread detkit starts (a data-loader worker): the process's setting on this thread.
void apply_flush_denormal_to_this_thread();

/// Whether the calling thread flushes denormals (both modes set).
bool this_thread_flushes_denormals();

}  // namespace detkit
