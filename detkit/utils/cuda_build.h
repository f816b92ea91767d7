#pragma once
// The CUDA side of the torch build detkit runs on, for the start log and `detkit --version`: the
// CUDA, cuDNN and NCCL versions torch (and so detkit) was built with, the GPU architectures of
// detkit's own CUDA kernels, and the GPUs this process sees.
#include <cstdint>
#include <string>
#include <vector>

namespace detkit {

struct GpuInfo {
  int index = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int major = 0;     // compute capability
  int minor = 0;
  int64_t memory = 0;  // bytes
};

struct CudaBuild {
  std::string cuda_version;   // torch's CUDA_VERSION build option ("13.0"); "" for a CPU torch
  std::string cudnn_version;  // its CUDNN_VERSION ("9.19.0")
  std::string nccl_version;   // the NCCL torch was built with ("2.28.9"); "" without
  std::string kernel_archs;   // detkit's kernels: TORCH_CUDA_ARCH_LIST ("8.0;9.0+PTX"); "" when
                              // detkit was built without them
  std::vector<GpuInfo> gpus;  // the CUDA devices visible to this process
};

/// This process's torch and detkit build, and its GPUs.
CudaBuild cuda_build();

/// One line: "CUDA 13.0, cuDNN 9.19.0, NCCL 2.28.9; detkit's CUDA kernels for 8.0;9.0+PTX;
/// GPUs: none visible" (or "GPUs: 0 NVIDIA H100 80GB HBM3 (sm_90, 79.2 GiB), 1 ...").
std::string cuda_build_line(const CudaBuild& build);
/// The same for this process.
std::string cuda_build_report();

/// The number of CUDA devices visible (0 without a driver, a GPU or a CUDA build of torch).
int visible_gpu_count();

/// "cuda" when a CUDA device is visible and detkit has its CUDA kernels, else "cpu": the default
/// of MODEL.DEVICE (Detectron2's is "cuda").
std::string default_device();

/// One process per GPU, as Detectron2's launch: makes GPU local_rank % (GPUs visible) the
/// process's current CUDA device, where MODEL.DEVICE "cuda" then places the model. Returns that
/// index, or -1 (nothing changed) where no GPU is visible or detkit has no CUDA kernels.
int use_gpu_of_local_rank(int local_rank);

/// NCCL's version number packed as torch::cuda::nccl::version() packs it (major << 32 |
/// minor << 16 | patch), as "major.minor.patch".
std::string nccl_version_text(uint64_t packed);

}  // namespace detkit
