#pragma once
// c10d's ProcessGroupNCCL where detkit is built with CUDA. Its header needs USE_C10D_NCCL, CUDA's
// and NCCL's headers: they stay in the .cpp, compiled alone.
#include <chrono>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace detkit::distributed {

/// True where this detkit makes NCCL process groups: built with CUDA (DETKIT_WITH_CUDA) against
/// a torch with NCCL.
bool nccl_available();

/// A ProcessGroupNCCL of `world_size` ranks over `store`, bound to CUDA device `gpu` (its
/// communicator is made at the first collective), its watchdog failing a collective that takes
/// longer than `timeout`. A detkit::Error where nccl_available() is false.
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int world_size, int gpu,
                                                    std::chrono::milliseconds timeout);

}  // namespace detkit::distributed
