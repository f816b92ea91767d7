#pragma once
// Which kernels OpenBLAS runs, and getting the right ones. Every Linear, mm and conv_transpose
// of this libtorch goes through OpenBLAS, and OpenBLAS 0.3.21 (Debian 12) does not know newer
// CPUs such as Intel Emerald Rapids: it falls back to its generic "Prescott" kernels (SSE3, no
// AVX), 5-7x slower there. OpenBLAS reads OPENBLAS_CORETYPE only when it loads, so the fix is
// to start the program again with it set; the same restart loads OpenBLAS's OpenMP build where
// Debian's pthreads build was loaded.
#include <optional>
#include <string>

namespace detkit {

struct CpuFeatures {
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512dq = false,
       avx512vl = false;
  bool avx512_bf16 = false;  // bfloat16 dot products in AVX-512 (Cooper Lake, Zen 4, ...)
  bool amx_bf16 = false;     // bfloat16 tile units (Sapphire Rapids and later)
  bool amd = false;          // vendor AuthenticAMD
};
/// This CPU's.
CpuFeatures cpu_features();

/// The OPENBLAS_CORETYPE to ask for when OpenBLAS picked `corename`: SkylakeX on an AVX-512 CPU
/// (F, BW, DQ, VL) or Haswell on an AVX2 + FMA CPU when `corename` is one of OpenBLAS's kernels
/// without AVX (Prescott, Core2, Penryn, Dunnington, Nehalem, Atom); nullopt otherwise (a
/// kernel OpenBLAS chose for the CPU it recognised is left alone).
std::optional<std::string> better_openblas_coretype(const std::string& corename,
                                                    const CpuFeatures& cpu);

/// When OPENBLAS_CORETYPE names kernels for a narrower instruction set than this CPU has (Haswell's
/// AVX2 kernels on an AVX-512 CPU, say: detkit keeps a value the user set), a warning for the log
/// that names what the CPU has and how to get its kernels; nullopt otherwise. `user_coretype` is
/// the variable's value ("" when unset), `corename` the kernels OpenBLAS runs.
std::optional<std::string> narrower_openblas_kernels_warning(const std::string& user_coretype,
                                                             const std::string& corename,
                                                             const CpuFeatures& cpu);
/// The same for this process: its OPENBLAS_CORETYPE, the loaded OpenBLAS's kernels, this CPU.
std::optional<std::string> narrower_openblas_kernels_warning();

/// The kernels the loaded OpenBLAS uses ("" when the BLAS is not OpenBLAS).
std::string openblas_corename();

/// How the loaded OpenBLAS runs its threads: OpenBLAS's openblas_get_parallel().
enum class OpenblasThreading { kNone = -1 /* not OpenBLAS */, kSequential, kPthreads, kOpenmp };
OpenblasThreading openblas_threading();

/// The folder of Debian's OpenMP build of OpenBLAS to load instead of `library` (the resolved
/// path of the loaded libopenblas), when `library` is Debian's pthreads build
/// (<lib>/openblas-pthread/...) and the OpenMP build is installed beside it
/// (<lib>/openblas-openmp/libopenblas.so.0 and libblas.so.3); nullopt otherwise. The pthreads
/// build keeps threads of its own that spin (sched_yield) after each call and compete with
/// libtorch's OpenMP team for the cores; the OpenMP build runs on that team and follows
/// --num-threads.
std::optional<std::string> openmp_openblas_dir(const std::string& library,
                                               OpenblasThreading threading);

/// At the start of main(), once, before libtorch computes anything: starts this program again
/// (same arguments) when the BLAS it loaded can be bettered, with
/// - OPENBLAS_CORETYPE set, when OpenBLAS picked generic kernels on a CPU that has better ones and
///   the user did not set OPENBLAS_CORETYPE;
/// - the OpenMP build of OpenBLAS first on LD_LIBRARY_PATH, when the pthreads build was loaded and
///   the OpenMP one is installed (see openmp_openblas_dir) and DETKIT_OPENBLAS_THREADING is not
///   "keep".
/// Returns only when nothing needs doing, or when the restart failed (then nothing changed).
void restart_with_better_blas(char** argv);

/// Where a program cannot start again (a Python process that loaded libtorch, a user's program
/// linking libdetkit): switches the loaded OpenBLAS to better_openblas_coretype's kernels in this
/// process, through the dynamic-architecture entry points Debian's OpenBLAS exports
/// (gotoblas_dynamic_quit / gotoblas_dynamic_init, which re-read OPENBLAS_CORETYPE). Nothing
/// changes when the user set OPENBLAS_CORETYPE, when OpenBLAS picked kernels for this CPU, or when
/// the entry points are absent. Call while no BLAS call runs (at start). Returns the kernels'
/// name now in use when it switched them, nullopt when it left them.
std::optional<std::string> switch_to_better_openblas_kernels();

/// One line for the log: the OpenBLAS build, its kernels and why (chosen by OpenBLAS, set by the
/// user, or set by detkit instead of the generic ones), and its threading (and whether detkit
/// chose it).
std::string blas_kernel_report();

}  // namespace detkit
