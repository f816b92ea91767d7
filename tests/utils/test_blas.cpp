// Which OpenBLAS detkit asks for: the right kernels where OpenBLAS fell back to its generic ones
// on a CPU with AVX2 or AVX-512, nothing where OpenBLAS recognised the CPU; Debian's OpenMP build
// where its pthreads build was loaded and the OpenMP one is installed beside it.
#include <gtest/gtest.h>

#include "detkit/utils/blas.h"
#include "tests/support/temp_dir.h"

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

TEST(BlasKernels, AUserChoiceNarrowerThanTheCpuIsWarnedAbout) {
  // AMD EPYC Zen 5 machines here set OPENBLAS_CORETYPE=Haswell in their environment.
  const auto haswell = narrower_openblas_kernels_warning("Haswell", "Haswell", avx512());
  ASSERT_TRUE(haswell);
  EXPECT_NE(haswell->find("OPENBLAS_CORETYPE=Haswell (set in the environment; detkit keeps it) "
                          "runs OpenBLAS's Haswell kernels (AVX2) on a CPU with AVX-512"),
            std::string::npos)
      << *haswell;
  EXPECT_NE(haswell->find("Unset OPENBLAS_CORETYPE"), std::string::npos) << *haswell;
  // OpenBLAS reports the kernels it runs, whatever spelling the user gave.
  EXPECT_TRUE(narrower_openblas_kernels_warning("haswell", "Haswell", avx512()));
  const auto prescott = narrower_openblas_kernels_warning("Prescott", "Prescott", avx2());
  ASSERT_TRUE(prescott);
  EXPECT_NE(prescott->find("Prescott kernels (SSE) on a CPU with AVX2"), std::string::npos)
      << *prescott;
  EXPECT_NE(prescott->find("detkit asks for Haswell"), std::string::npos) << *prescott;
}

TEST(BlasKernels, KernelsAsWideAsTheCpuOrChosenByOpenBlasAreNotWarnedAbout) {
  for (const char* core : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    EXPECT_FALSE(narrower_openblas_kernels_warning(core, core, avx512())) << core;
  for (const char* core : {"Haswell", "Zen", "SkylakeX"})
    EXPECT_FALSE(narrower_openblas_kernels_warning(core, core, avx2())) << core;
  EXPECT_FALSE(narrower_openblas_kernels_warning("", "Haswell", avx512()));  // OpenBLAS chose
  EXPECT_FALSE(narrower_openblas_kernels_warning("Prescott", "Prescott", CpuFeatures{}));
  // A name this table does not know (a later OpenBLAS's, or no OpenBLAS at all): nothing said.
  EXPECT_FALSE(narrower_openblas_kernels_warning("Zen5", "Zen5", avx512()));
  EXPECT_FALSE(narrower_openblas_kernels_warning("Haswell", "", avx512()));
}

TEST(BlasThreading, TheOpenmpBuildBesideDebiansPthreadsBuildIsPicked) {
  testing::TempDir lib("blas_threading");
  const std::string pthreads = lib.write("openblas-pthread/libopenblasp-r0.3.21.so", "");
  lib.write("openblas-openmp/libopenblas.so.0", "");
  lib.write("openblas-openmp/libblas.so.3", "");
  EXPECT_EQ(openmp_openblas_dir(pthreads, OpenblasThreading::kPthreads),
            lib.path("openblas-openmp"));
  // Already OpenMP (or sequential, or not OpenBLAS): nothing to do.
  for (auto threading :
       {OpenblasThreading::kOpenmp, OpenblasThreading::kSequential, OpenblasThreading::kNone})
    EXPECT_FALSE(openmp_openblas_dir(pthreads, threading));
  // An OpenBLAS outside Debian's layout (a user's own build) is left alone.
  EXPECT_FALSE(
      openmp_openblas_dir(lib.write("opt/libopenblas.so.0", ""), OpenblasThreading::kPthreads));
}

TEST(BlasThreading, AnIncompleteOpenmpBuildIsNotPicked) {
  testing::TempDir lib("blas_threading_incomplete");
  const std::string pthreads = lib.write("openblas-pthread/libopenblasp-r0.3.21.so", "");
  EXPECT_FALSE(openmp_openblas_dir(pthreads, OpenblasThreading::kPthreads));  // not installed
  lib.write("openblas-openmp/libopenblas.so.0", "");
  EXPECT_FALSE(openmp_openblas_dir(pthreads, OpenblasThreading::kPthreads));  // no libblas.so.3
}

TEST(BlasKernels, TheReportNamesTheKernels) {
  const std::string report = blas_kernel_report();
  std::cout << report << "\n";
  if (openblas_corename().empty()) {
    EXPECT_EQ(report.rfind("BLAS: not OpenBLAS", 0), 0u) << report;
  } else {
    EXPECT_NE(report.find("kernels " + openblas_corename()), std::string::npos) << report;
    EXPECT_NE(report.find("; threads: "), std::string::npos) << report;
  }
}

}  // namespace
}  // namespace detkit
