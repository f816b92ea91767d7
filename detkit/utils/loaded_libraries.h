#pragma once
// Which shared libraries a process maps, and which of them would be a second BLAS, oneDNN or
// OpenMP runtime beside libtorch's own. detkit runs on PyPI's torch: libtorch_cpu.so carries MKL's
// BLAS and oneDNN linked in (and exports MKL's BLAS symbols: sgemm_, cblas_sgemm_batch, ...), and
// torch's lib folder carries the libgomp it was built with. One of each in a process: two OpenMP
// runtimes run two thread teams that take the cores from each other, and a second BLAS exporting
// the same symbols can take torch's calls (whichever the loader finds first).
#include <string>
#include <vector>

namespace detkit {

/// The shared libraries a /proc/<pid>/maps text maps: each mapped file path whose file name ends
/// in ".so" or has ".so." in it, once, in the order first mapped (as the kernel names it: links
/// resolved; " (deleted)" taken off).
std::vector<std::string> mapped_libraries(const std::string& maps);
/// This process's (/proc/self/maps).
std::vector<std::string> loaded_libraries();

/// The folder of libtorch_cpu.so among `libraries` ("" when it is not one of them).
std::string torch_library_dir(const std::vector<std::string>& libraries);

/// Those of `libraries` that are a BLAS, oneDNN or OpenMP runtime other than torch's:
/// libopenblas* (and anything in a folder named openblas*, such as Debian's
/// openblas-pthread/libblas.so.3), libblis*, libatlas* / libsatlas* / libtatlas*, libmkl*
/// (MKL's and the old MKL-DNN's), libdnnl*, libiomp* and libomp (Intel's and LLVM's OpenMP), and
/// a libgomp* outside the folder of libtorch_cpu.so (every libgomp when libtorch_cpu.so is not
/// among `libraries`).
std::vector<std::string> foreign_math_libraries(const std::vector<std::string>& libraries);
/// This process's.
std::vector<std::string> foreign_math_libraries();

/// Those of `libraries` that are a plain BLAS / LAPACK interface library (libblas.so*,
/// libcblas.so*, liblapack.so*, liblapacke.so*) not counted above: Debian's reference (netlib)
/// BLAS and LAPACK in <lib>/blas/ and <lib>/lapack/, which Debian's OpenCV core brings. Not a
/// second BLAS for torch as long as torch's BLAS symbols resolve to libtorch_cpu.so (see
/// blas_symbol_owner); listed apart so that it is said rather than failed on.
std::vector<std::string> reference_blas_libraries(const std::vector<std::string>& libraries);
/// This process's.
std::vector<std::string> reference_blas_libraries();

/// The library that provides `symbol` (sgemm_, dgemm_, cblas_sgemm_batch, ...) to this process's
/// global lookup, dlsym(RTLD_DEFAULT) then dladdr, its path with links resolved; "" when no
/// loaded library defines it.
std::string blas_symbol_owner(const char* symbol);

}  // namespace detkit
