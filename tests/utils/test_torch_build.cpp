// The log's line on the torch build detkit runs on: its version, BLAS, oneDNN and OpenMP team,
// as libtorch reports them at run time.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/version.h>

#include <iostream>
#include <regex>

#include "detkit/utils/threads.h"
#include "detkit/utils/torch_build.h"

namespace detkit {
namespace {

TEST(TorchBuild, VersionsReadFromLibtorchsTexts) {
  EXPECT_EQ(mkl_version_number("Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build "
                               "20240605 for Intel(R) 64 architecture applications"),
            "2024.2");
  EXPECT_EQ(onednn_version_number(
                "Intel(R) MKL-DNN v3.10.2 (Git Hash f1d471933dc852f956fd05389f9313c7148783d5)"),
            "3.10.2");
  EXPECT_EQ(onednn_version_number("oneDNN v3.11.0"), "3.11.0");
  EXPECT_EQ(mkl_version_number(""), "");
  EXPECT_EQ(onednn_version_number("MKL-DNN not found"), "");
  EXPECT_EQ(parallel_backend_name("ATen/Parallel:\n\tat::get_num_threads() : 2\n"
                                  "ATen parallel backend: OpenMP\n"),
            "OpenMP");
  EXPECT_EQ(parallel_backend_name("no backend line"), "");
}

TEST(TorchBuild, OneLine) {
  TorchBuild build{"2.11.0", "mkl", "2024.2", "3.10.2", "OpenMP", 2};
  EXPECT_EQ(torch_build_line(build),
            "torch 2.11.0 (MKL 2024.2 BLAS, oneDNN 3.10.2, OpenMP 2 threads)");
  build.threads = 1;
  build.onednn_version = "";
  EXPECT_EQ(torch_build_line(build), "torch 2.11.0 (MKL 2024.2 BLAS, no oneDNN, OpenMP 1 thread)");
  build.blas_info = "eigen";
  build.parallel_backend = "";
  EXPECT_EQ(torch_build_line(build), "torch 2.11.0 (eigen BLAS, no oneDNN, unknown 1 thread)");
}

TEST(TorchBuild, ThisProcessRunsTorchsMklOnednnAndOpenmp) {
  configure_threads(2);
  const std::string line = torch_build_report();
  std::cout << line << "\n";
  // PyPI's torch: MKL's BLAS and oneDNN linked into libtorch_cpu.so, libgomp's OpenMP team.
  EXPECT_TRUE(std::regex_match(
      line, std::regex(std::string("torch ") + TORCH_VERSION +
                       " \\(MKL [0-9.]+ BLAS, oneDNN [0-9]+\\.[0-9.]+, OpenMP 2 threads\\)")))
      << line;
  configure_threads(1);
  EXPECT_NE(torch_build_report().find("OpenMP 1 thread)"), std::string::npos);
}

}  // namespace
}  // namespace detkit
