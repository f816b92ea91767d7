#pragma once
// libtorch's thread count: this Debian build starts with 1 thread whatever the machine has.

namespace detkit {

/// Sets libtorch's intra-op thread count, and OpenBLAS's (a pthread OpenBLAS keeps one thread
/// per core whatever libtorch is told: two ranks of one thread each would run four busy BLAS
/// threads on two cores), and returns it. `requested` > 0 wins; otherwise the environment
/// variable DETKIT_NUM_THREADS (when set and positive); otherwise the core count.
int configure_threads(int requested = 0);

}  // namespace detkit
