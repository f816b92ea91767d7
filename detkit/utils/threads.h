#pragma once
// libtorch's thread count, set once for the process (the CLI's --num-threads, DETKIT_NUM_THREADS).

#include <cstdint>

namespace detkit {

/// Sets libtorch's intra-op thread count (its OpenMP team, which its BLAS and oneDNN run on too),
/// and returns it. `requested` > 0 wins; otherwise the environment variable DETKIT_NUM_THREADS
/// (when set and positive); otherwise the core count.
int configure_threads(int requested = 0);

/// For a helper thread (a data-loader worker): libtorch ops it runs stay on this one thread,
/// as PyTorch's DataLoader workers set torch.set_num_threads(1). Without it each such thread
/// opened its own OpenMP team of `configure_threads` threads beside the training step's: with
/// 2 workers on 2 cores, RetinaNet's step took 8 % longer. Other threads keep their count.
void use_one_thread_for_ops_in_this_thread();

/// How many threads libtorch's at::parallel_for, called from detkit's own code, runs `n` items of
/// grain 1 on: libtorch's team size, at most n, where detkit is built with OpenMP (the inline
/// function splits work only where _OPENMP is defined); 1 where it is not, as before GCC builds
/// had -fopenmp.
int parallel_for_threads(int64_t n);

}  // namespace detkit
