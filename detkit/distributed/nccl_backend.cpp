#include "detkit/distributed/nccl_backend.h"

#if DETKIT_WITH_CUDA
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>  // USE_C10D_NCCL: CMakeLists.txt
#endif

#include "detkit/utils/error.h"

namespace detkit::distributed {

bool nccl_available() {
#if DETKIT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                    int rank, int world_size, int gpu,
                                                    std::chrono::milliseconds timeout) {
#if DETKIT_WITH_CUDA
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
  group->setBoundDeviceId(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(gpu)));
  return group;
#else
  (void)store;
  (void)timeout;
  throw Error("rank " + std::to_string(rank) + " of " + std::to_string(world_size) +
              ": the NCCL backend (GPU " + std::to_string(gpu) +
              ") needs detkit built with CUDA (DETKIT_CUDA=ON); this one was built without it");
#endif
}

}  // namespace detkit::distributed
