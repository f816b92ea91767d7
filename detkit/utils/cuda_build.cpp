#include "detkit/utils/cuda_build.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <fmt/format.h>

#if DETKIT_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/cuda/nccl.h>
#endif

#include "detkit/utils/torch_build.h"

namespace detkit {

std::string nccl_version_text(uint64_t packed) {
  return fmt::format("{}.{}.{}", packed >> 32, (packed >> 16) & 0xffff, packed & 0xffff);
}

int visible_gpu_count() {
  if (!at::detail::getCUDAHooks().hasCUDA()) return 0;
  return at::detail::getCUDAHooks().getNumGPUs();
}

std::string default_device() {
#if DETKIT_WITH_CUDA
  return visible_gpu_count() > 0 ? "cuda" : "cpu";
#else
  return "cpu";
#endif
}

int use_gpu_of_local_rank(int local_rank) {
  const int gpus = visible_gpu_count();
  if (default_device() != "cuda" || gpus == 0 || local_rank < 0) return -1;
  const int index = local_rank % gpus;
#if DETKIT_WITH_CUDA
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
#endif
  return index;
}

CudaBuild cuda_build() {
  CudaBuild build;
  if (build_option("USE_CUDA") == "ON") {
    build.cuda_version = build_option("CUDA_VERSION");
    build.cudnn_version = build_option("CUDNN_VERSION");
  }
#if DETKIT_WITH_CUDA
  build.nccl_version = nccl_version_text(torch::cuda::nccl::version());
  build.kernel_archs = DETKIT_CUDA_ARCH_LIST;
  for (int i = 0; i < visible_gpu_count(); ++i) {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i));
    build.gpus.push_back({i, p->name, p->major, p->minor, static_cast<int64_t>(p->totalGlobalMem)});
  }
#endif
  return build;
}

std::string cuda_build_line(const CudaBuild& build) {
  if (build.cuda_version.empty()) return "CUDA: none (a CPU build of torch)";
  std::string line = "CUDA " + build.cuda_version;
  line += build.cudnn_version.empty() ? ", no cuDNN" : ", cuDNN " + build.cudnn_version;
  line += build.nccl_version.empty() ? "" : ", NCCL " + build.nccl_version;
  line += build.kernel_archs.empty() ? "; detkit built without its CUDA kernels"
                                     : "; detkit's CUDA kernels for " + build.kernel_archs;
  if (build.gpus.empty()) return line + "; GPUs: none visible";
  line += "; GPUs:";
  for (size_t i = 0; i < build.gpus.size(); ++i) {
    const GpuInfo& g = build.gpus[i];
    line += fmt::format("{} {} {} (sm_{}{}, {:.1f} GiB)", i ? "," : "", g.index, g.name, g.major,
                        g.minor, static_cast<double>(g.memory) / (1024.0 * 1024.0 * 1024.0));
  }
  return line;
}

std::string cuda_build_report() { return cuda_build_line(cuda_build()); }

}  // namespace detkit
