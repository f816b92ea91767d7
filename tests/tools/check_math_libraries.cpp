// check_math_libraries: one BLAS, one oneDNN, one OpenMP in a detkit process, torch's. Linked
// with every library the `detkit` binary links (tests/tools/CMakeLists.txt), each kept as a
// dependency whether or not this program calls into it, so that it maps at start what `detkit`
// maps, and more if anything. It computes a little (a convolution, a Linear layer, a matrix
// product: torch's oneDNN, BLAS and OpenMP team), then exits 1 naming each library that is a
// second BLAS, oneDNN or OpenMP runtime (detkit/utils/loaded_libraries.h), or each BLAS symbol
// torch calls that the loader finds outside libtorch_cpu.so. Debian's reference BLAS / LAPACK,
// which Debian's OpenCV core brings, is listed, not failed on.
#include <ATen/ATen.h>

#include <iostream>
#include <string>
#include <vector>

#include "detkit/utils/loaded_libraries.h"
#include "detkit/utils/threads.h"
#include "detkit/utils/torch_build.h"

int main() {
  detkit::configure_threads();  // as the CLI: every core unless DETKIT_NUM_THREADS says
  const at::Tensor image = at::rand({1, 3, 32, 32});
  const at::Tensor features = at::relu(at::conv2d(image, at::rand({8, 3, 3, 3}), at::rand({8})));
  const at::Tensor scores = at::linear(features.flatten(1), at::rand({4, 8 * 30 * 30}));
  const at::Tensor product = at::mm(scores.t(), scores);
  if (!product.isfinite().all().item<bool>()) {
    std::cerr << "check_math_libraries: the computation gave a non-finite value\n";
    return 1;
  }
  std::cout << detkit::torch_build_report() << "\n";

  int failures = 0;
  const std::vector<std::string> libraries = detkit::loaded_libraries();
  if (detkit::torch_library_dir(libraries).empty()) {
    std::cerr << "check_math_libraries: libtorch_cpu.so is not mapped\n";
    ++failures;
  }
  for (const std::string& path : detkit::foreign_math_libraries(libraries)) {
    std::cerr << "check_math_libraries: a second BLAS, oneDNN or OpenMP runtime is mapped: " << path
              << "\n";
    ++failures;
  }
  for (const std::string& path : detkit::reference_blas_libraries(libraries))
    std::cout << "reference BLAS / LAPACK also mapped: " << path << "\n";
  for (const char* symbol : {"sgemm_", "dgemm_", "cblas_sgemm_batch"}) {
    const std::string owner = detkit::blas_symbol_owner(symbol);
    const bool torchs =
        owner.size() >= 16 && owner.compare(owner.size() - 16, 16, "/libtorch_cpu.so") == 0;
    (torchs ? std::cout : std::cerr) << symbol << " from " << (owner.empty() ? "nowhere" : owner)
                                     << (torchs ? "\n" : ": not libtorch_cpu.so\n");
    failures += torchs ? 0 : 1;
  }
  std::cout << libraries.size() << " libraries mapped; "
            << (failures ? "FAILED" : "one BLAS, one oneDNN, one OpenMP: torch's") << "\n";
  return failures ? 1 : 0;
}
