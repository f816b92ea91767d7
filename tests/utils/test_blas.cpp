// Which OpenBLAS kernels detkit asks for: the right ones where OpenBLAS fell back to its
// generic kernels on a CPU with AVX2 or AVX-512, nothing where OpenBLAS recognised the CPU.
#include "detkit/utils/blas.h"

#include <gtest/gtest.h>

namespace detkit {
namespace {

CpuFeatures avx512() { return {true, true, true, true, true, true}; }
CpuFeatures avx2() { return {true, true, false, false, false, false}; }

TEST(BlasKernels, GenericKernelsOnAModernCpuGetTheRightOnes) {
  // Intel Emerald Rapids under OpenBLAS 0.3.21: "Prescott".
  EXPECT_EQ(better_openblas_coretype("Prescott", avx512()), "SkylakeX");
  EXPECT_EQ(better_openblas_coretype("Nehalem", avx512()), "SkylakeX");
  EXPECT_EQ(better_openblas_coretype("Prescott", avx2()), "Haswell");
  EXPECT_EQ(better_openblas_coretype("Core2", avx2()), "Haswell");
}

TEST(BlasKernels, ACpuOpenBlasRecognisedIsLeftAlone) {
  for (const char* core : {"SkylakeX", "Haswell", "Zen", "Sandybridge", "Cooperlake", ""})
    EXPECT_FALSE(better_openblas_coretype(core, avx512())) << core;
  // AVX-512 needs F, BW, DQ and VL for SkylakeX's kernels; without AVX2 + FMA nothing is better.
  CpuFeatures partial = avx2();
  partial.avx512f = true;
  EXPECT_EQ(better_openblas_coretype("Prescott", partial), "Haswell");
  EXPECT_FALSE(better_openblas_coretype("Prescott", CpuFeatures{}));
}

TEST(BlasKernels, TheReportNamesTheKernels) {
  const std::string report = blas_kernel_report();
  std::cout << report << "\n";
  if (openblas_corename().empty()) {
    EXPECT_EQ(report.rfind("BLAS: not OpenBLAS", 0), 0u) << report;
  } else {
    EXPECT_NE(report.find("kernels " + openblas_corename()), std::string::npos) << report;
  }
}

}  // namespace
}  // namespace detkit
