#include "detkit/utils/denormals.h"

#include <ATen/Context.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <atomic>

namespace detkit {
namespace {
std::atomic<bool> g_flush{false};
[[maybe_unused]] constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;  // MXCSR
}  // namespace

bool set_flush_denormal(bool on) {
  if (!at::globalContext().setFlushDenormal(on)) return false;
  g_flush = on;
  // The team libtorch's and oneDNN's parallel ops run on (GCC builds detkit with -fopenmp, and a
  // region without num_threads gets the same team: this thread's OpenMP count, which
  // at::set_num_threads sets): each of its threads sets its own register.
#pragma omp parallel
  at::globalContext().setFlushDenormal(on);
  return true;
}

bool flush_denormal() { return g_flush; }

void apply_flush_denormal_to_this_thread() {
  at::globalContext().setFlushDenormal(g_flush.load());
}

bool this_thread_flushes_denormals() {
#if defined(__SSE__)
  const unsigned mxcsr = _mm_getcsr();
  return (mxcsr & kFlushToZero) && (mxcsr & kDenormalsAreZero);
#else
  return false;  // libtorch sets the modes on x86 only
#endif
}

}  // namespace detkit
