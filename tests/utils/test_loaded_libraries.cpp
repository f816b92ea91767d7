// One BLAS, one oneDNN, one OpenMP in a process: torch's. The matcher on made-up maps (Debian's
// OpenBLAS, oneDNN and libgomp beside torch's lib folder: named; torch's own: not), then this test
// process itself after a matrix product: nothing foreign mapped, and the BLAS symbols torch calls
// found in libtorch_cpu.so (not in the reference BLAS Debian's OpenCV brings, where it is mapped).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "detkit/utils/loaded_libraries.h"
#include "detkit/utils/strings.h"

namespace detkit {
namespace {

using Paths = std::vector<std::string>;

const std::string kTorchLib = "/work/.venv/lib/python3.11/site-packages/torch/lib";
const std::string kDebianLib = "/usr/lib/x86_64-linux-gnu";

std::string file_name_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// One line of /proc/<pid>/maps: address range, permissions, offset, device, inode, path.
std::string maps_line(const std::string& permissions, const std::string& path) {
  return "7f0000000000-7f0000100000 " + permissions + " 00000000 fe:00 11         " + path + "\n";
}

TEST(LoadedLibraries, MapsLinesGiveEachMappedLibraryOnce) {
  const std::string maps =
      maps_line("r--p", "/usr/bin/detkit") + maps_line("r--p", kTorchLib + "/libtorch_cpu.so") +
      maps_line("r-xp", kTorchLib + "/libtorch_cpu.so") +
      maps_line("r-xp", kTorchLib + "/libgomp.so.1") +
      "7f0002000000-7f0002001000 rw-p 00000000 00:00 0 \n" + maps_line("rw-p", "[heap]") +
      maps_line("r-xp", kDebianLib + "/openblas-pthread/libopenblasp-r0.3.21.so") +
      maps_line("r-xp", "/tmp/a dir/libx.so (deleted)") +
      maps_line("r--p", "/usr/share/locale/de/x.mo") + maps_line("r-xp", "[vdso]");
  EXPECT_EQ(
      mapped_libraries(maps),
      (Paths{kTorchLib + "/libtorch_cpu.so", kTorchLib + "/libgomp.so.1",
             kDebianLib + "/openblas-pthread/libopenblasp-r0.3.21.so", "/tmp/a dir/libx.so"}));
  EXPECT_TRUE(mapped_libraries("").empty());
}

TEST(LoadedLibraries, DebiansOpenblasOnednnAndLibgompAreForeign) {
  const Paths libraries = {
      kTorchLib + "/libtorch_cpu.so",
      kTorchLib + "/libgomp.so.1",
      kTorchLib + "/libc10.so",
      kDebianLib + "/openblas-pthread/libopenblas.so.0",
      kDebianLib + "/openblas-pthread/libblas.so.3",  // OpenBLAS under the generic name
      kDebianLib + "/libdnnl.so.2",
      kDebianLib + "/libgomp.so.1",
      "/opt/intel/oneapi/mkl/latest/lib/libmkl_core.so.2",
      "/opt/intel/oneapi/compiler/latest/lib/libiomp5.so",
      kDebianLib + "/libopencv_core.so.406",
      kDebianLib + "/blas/libblas.so.3",
      kDebianLib + "/lapack/liblapack.so.3",
  };
  EXPECT_EQ(
      foreign_math_libraries(libraries),
      (Paths{kDebianLib + "/openblas-pthread/libopenblas.so.0",
             kDebianLib + "/openblas-pthread/libblas.so.3", kDebianLib + "/libdnnl.so.2",
             kDebianLib + "/libgomp.so.1", "/opt/intel/oneapi/mkl/latest/lib/libmkl_core.so.2",
             "/opt/intel/oneapi/compiler/latest/lib/libiomp5.so"}));
  // Debian's reference BLAS and LAPACK (netlib's, which its OpenCV core links): said apart.
  EXPECT_EQ(reference_blas_libraries(libraries),
            (Paths{kDebianLib + "/blas/libblas.so.3", kDebianLib + "/lapack/liblapack.so.3"}));
  EXPECT_EQ(torch_library_dir(libraries), kTorchLib);
}

TEST(LoadedLibraries, TorchsOwnLibrariesAreNotForeign) {
  const Paths torch = {kTorchLib + "/libtorch_cpu.so",
                       kTorchLib + "/libtorch.so",
                       kTorchLib + "/libc10.so",
                       kTorchLib + "/libgomp.so.1",
                       kDebianLib + "/libopencv_core.so.406",
                       kDebianLib + "/libstdc++.so.6"};
  EXPECT_TRUE(foreign_math_libraries(torch).empty());
  EXPECT_TRUE(reference_blas_libraries(torch).empty());
  // A libgomp is torch's by its folder, not its name: without libtorch_cpu.so mapped, it is not.
  EXPECT_EQ(foreign_math_libraries(Paths{kTorchLib + "/libgomp.so.1"}),
            Paths{kTorchLib + "/libgomp.so.1"});
  // Another torch's lib folder (a second torch in the process) is another OpenMP.
  EXPECT_EQ(foreign_math_libraries(
                Paths{kTorchLib + "/libtorch_cpu.so", "/other/torch/lib/libgomp.so.1"}),
            Paths{"/other/torch/lib/libgomp.so.1"});
  EXPECT_EQ(torch_library_dir(Paths{kDebianLib + "/libgomp.so.1"}), "");
}

TEST(LoadedLibraries, ThisProcessMapsOnlyTorchsBlasOnednnAndOpenmp) {
  // Compute first: a library loaded on first use is mapped by then.
  const at::Tensor a = at::rand({64, 64}), b = at::rand({64, 64});
  const at::Tensor product = at::mm(a, b);
  EXPECT_TRUE(at::allclose(product, (a.unsqueeze(2) * b.unsqueeze(0)).sum(1), 1e-4, 1e-5));
  const Paths libraries = loaded_libraries();
  ASSERT_FALSE(torch_library_dir(libraries).empty()) << "libtorch_cpu.so is not mapped";
  std::cout << "libtorch_cpu.so from " << torch_library_dir(libraries) << "; " << libraries.size()
            << " libraries mapped\n";
  EXPECT_EQ(foreign_math_libraries(), Paths{})
      << "a second BLAS, oneDNN or OpenMP runtime beside torch's is mapped";
  const Paths reference = reference_blas_libraries();
  if (!reference.empty())
    std::cout << "reference BLAS / LAPACK also mapped: " << join(reference, ", ") << "\n";
  // MKL's BLAS, which libtorch_cpu.so carries and exports: the loader finds torch's, whatever
  // else is mapped.
  for (const char* symbol : {"sgemm_", "dgemm_", "cblas_sgemm_batch"}) {
    const std::string owner = blas_symbol_owner(symbol);
    std::cout << symbol << " from " << owner << "\n";
    EXPECT_EQ(file_name_of(owner), "libtorch_cpu.so") << symbol << " resolves to " << owner;
  }
  EXPECT_EQ(blas_symbol_owner("detkit_no_such_symbol"), "");
}

}  // namespace
}  // namespace detkit
