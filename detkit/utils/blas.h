#pragma once
// Which kernels OpenBLAS runs, and getting the right ones. Every Linear, mm and conv_transpose
// of this libtorch goes through OpenBLAS, and OpenBLAS 0.3.21 (Debian 12) does not know newer
// CPUs such as Intel Emerald Rapids: it falls back to its generic "Prescott" kernels (SSE3, no
// AVX), 5-7x slower there. OpenBLAS reads OPENBLAS_CORETYPE only when it loads, so the fix is
// to start the program again with it set.
#include <optional>
#include <string>

namespace detkit {

struct CpuFeatures {
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512dq = false,
       avx512vl = false;
};
/// This CPU's.
CpuFeatures cpu_features();

/// The OPENBLAS_CORETYPE to ask for when OpenBLAS picked `corename`: SkylakeX on an AVX-512 CPU
/// (F, BW, DQ, VL) or Haswell on an AVX2 + FMA CPU when `corename` is one of OpenBLAS's kernels
/// without AVX (Prescott, Core2, Penryn, Dunnington, Nehalem, Atom); nullopt otherwise (a
/// kernel OpenBLAS chose for the CPU it recognised is left alone).
std::optional<std::string> better_openblas_coretype(const std::string& corename,
                                                    const CpuFeatures& cpu);

/// The kernels the loaded OpenBLAS uses ("" when the BLAS is not OpenBLAS).
std::string openblas_corename();

/// At the start of main(): when OpenBLAS picked generic kernels on a CPU that has better ones
/// and the user did not set OPENBLAS_CORETYPE, starts this program again (same arguments) with
/// OPENBLAS_CORETYPE set; returns only when nothing needs doing, or when the restart failed.
void restart_with_better_blas_kernels(char** argv);

/// One line for the log: the OpenBLAS build, its kernels and why (chosen by OpenBLAS, set by the
/// user, or set by detkit instead of the generic ones).
std::string blas_kernel_report();

}  // namespace detkit
