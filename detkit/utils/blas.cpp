#include "detkit/utils/blas.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cstdlib>

namespace detkit {

CpuFeatures cpu_features() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  return f;
}

std::optional<std::string> better_openblas_coretype(const std::string& corename,
                                                    const CpuFeatures& cpu) {
  constexpr std::array<const char*, 6> kWithoutAvx = {"Prescott", "Core2", "Penryn",
                                                      "Dunnington", "Nehalem", "Atom"};
  bool generic = false;
  for (const char* name : kWithoutAvx) generic = generic || corename == name;
  if (!generic) return std::nullopt;
  if (cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl) return "SkylakeX";
  if (cpu.avx2 && cpu.fma) return "Haswell";
  return std::nullopt;
}

namespace {
const char* call_string_function(const char* symbol) {
  using Get = char* (*)();
  auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, symbol));
  return get ? get() : nullptr;
}
constexpr const char* kRestartedFrom = "DETKIT_OPENBLAS_PICKED";  // set on the restart
}  // namespace

std::string openblas_corename() {
  const char* name = call_string_function("openblas_get_corename");
  return name ? name : "";
}

void restart_with_better_blas_kernels(char** argv) {
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if ((user && *user) || std::getenv(kRestartedFrom)) return;  // the user's choice, or done
  const std::string picked = openblas_corename();
  const auto better = better_openblas_coretype(picked, cpu_features());
  if (!better) return;
  setenv("OPENBLAS_CORETYPE", better->c_str(), 1);
  setenv(kRestartedFrom, picked.c_str(), 1);
  execv("/proc/self/exe", argv);
  // The restart failed: go on with the generic kernels, and say so in the report.
  unsetenv("OPENBLAS_CORETYPE");
}

std::string blas_kernel_report() {
  const char* config = call_string_function("openblas_get_config");
  if (!config) return "BLAS: not OpenBLAS (libtorch's own choice)";
  std::string line = std::string("BLAS: ") + config + "; kernels " + openblas_corename();
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if (const char* picked = std::getenv(kRestartedFrom))
    line += std::string(" (OPENBLAS_CORETYPE set by detkit: OpenBLAS picked its generic ") +
            picked + " kernels for this CPU)";
  else if (user && *user)
    line += std::string(" (OPENBLAS_CORETYPE=") + user + " set by the user: kept)";
  else
    line += " (chosen by OpenBLAS)";
  return line;
}

}  // namespace detkit
