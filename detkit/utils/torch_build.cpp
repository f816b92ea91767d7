#include "detkit/utils/torch_build.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <caffe2/core/common.h>
#include <torch/version.h>

#include <cctype>

namespace detkit {

namespace {
// The run of digits and dots that starts at `at` in `text` ("" when none starts there).
std::string version_at(const std::string& text, size_t at) {
  size_t end = at;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.'))
    ++end;
  while (end > at && text[end - 1] == '.') --end;
  return text.substr(at, end - at);
}

std::string version_after(const std::string& text, const std::string& marker) {
  const size_t at = text.find(marker);
  return at == std::string::npos ? "" : version_at(text, at + marker.size());
}

}  // namespace

std::string build_option(const char* key) {
  const auto& options = caffe2::GetBuildOptions();
  const auto it = options.find(key);
  return it == options.end() ? "" : it->second;
}

std::string mkl_version_number(const std::string& text) {
  return version_after(text, "Math Kernel Library Version ");
}

std::string onednn_version_number(const std::string& text) {
  std::string version = version_after(text, "MKL-DNN v");
  return version.empty() ? version_after(text, "oneDNN v") : version;
}

std::string parallel_backend_name(const std::string& parallel_info) {
  const std::string marker = "ATen parallel backend: ";
  const size_t at = parallel_info.find(marker);
  if (at == std::string::npos) return "";
  const size_t begin = at + marker.size();
  size_t end = parallel_info.find('\n', begin);
  if (end == std::string::npos) end = parallel_info.size();
  while (end > begin && std::isspace(static_cast<unsigned char>(parallel_info[end - 1]))) --end;
  return parallel_info.substr(begin, end - begin);
}

TorchBuild torch_build() {
  TorchBuild build;
  build.version = build_option("TORCH_VERSION");
  if (build.version.empty()) build.version = TORCH_VERSION;  // the headers detkit built with
  build.blas_info = build_option("BLAS_INFO");
  if (at::hasMKL()) build.mkl_version = mkl_version_number(at::get_mkl_version());
  if (at::hasMKLDNN()) build.onednn_version = onednn_version_number(at::get_mkldnn_version());
  build.parallel_backend = parallel_backend_name(at::get_parallel_info());
  build.threads = at::get_num_threads();
  return build;
}

std::string torch_build_line(const TorchBuild& build) {
  std::string blas;
  if (build.blas_info == "mkl")
    blas = build.mkl_version.empty() ? "MKL" : "MKL " + build.mkl_version;
  else
    blas = build.blas_info.empty() ? "unknown" : build.blas_info;
  const std::string onednn =
      build.onednn_version.empty() ? "no oneDNN" : "oneDNN " + build.onednn_version;
  const std::string backend = build.parallel_backend.empty() ? "unknown" : build.parallel_backend;
  return "torch " + build.version + " (" + blas + " BLAS, " + onednn + ", " + backend + " " +
         std::to_string(build.threads) + (build.threads == 1 ? " thread)" : " threads)");
}

std::string torch_build_report() { return torch_build_line(torch_build()); }

}  // namespace detkit
