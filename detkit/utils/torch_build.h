#pragma once
// The torch build detkit runs on, for the log: its version and the one BLAS, oneDNN and OpenMP
// every process of detkit computes with (all of them libtorch's own; see loaded_libraries.h).
#include <string>

namespace detkit {

/// What libtorch reports about itself at run time.
struct TorchBuild {
  std::string version;           // caffe2::GetBuildOptions()'s TORCH_VERSION ("2.11.0")
  std::string blas_info;         // its BLAS_INFO ("mkl"; named as is when not MKL)
  std::string mkl_version;       // at::get_mkl_version() ("" without MKL)
  std::string onednn_version;    // at::get_mkldnn_version() ("" without oneDNN)
  std::string parallel_backend;  // at::get_parallel_info()'s "ATen parallel backend" ("OpenMP")
  int threads = 0;               // at::get_num_threads()
};

/// This process's libtorch.
TorchBuild torch_build();

/// One of libtorch's build options (caffe2::GetBuildOptions(): "TORCH_VERSION", "CUDA_VERSION",
/// "USE_CUDA", ...); "" when it has none by that name.
std::string build_option(const char* key);

/// The version number in at::get_mkl_version()'s text ("Intel(R) oneAPI Math Kernel Library
/// Version 2024.2-Product Build 20240605 for ..." gives "2024.2"); "" when there is none.
std::string mkl_version_number(const std::string& text);
/// The version number in at::get_mkldnn_version()'s text ("Intel(R) MKL-DNN v3.10.2 (Git Hash
/// ...)" gives "3.10.2"); "" when there is none.
std::string onednn_version_number(const std::string& text);
/// The backend named on at::get_parallel_info()'s "ATen parallel backend: " line ("" if none).
std::string parallel_backend_name(const std::string& parallel_info);

/// One line: "torch 2.11.0 (MKL 2024.2 BLAS, oneDNN 3.10.2, OpenMP 2 threads)".
std::string torch_build_line(const TorchBuild& build);
/// The same for this process, as the CLI logs it at start (after its thread count is set).
std::string torch_build_report();

}  // namespace detkit
