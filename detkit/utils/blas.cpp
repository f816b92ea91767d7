#include "detkit/utils/blas.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <utility>

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
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d))  // "AuthenticAMD" in EBX, EDX, ECX
    f.amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) f.amx_bf16 = (d >> 22) & 1;  // CPUID.7.0:EDX[22]
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = (a >> 5) & 1;  // CPUID.7.1:EAX[5]
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
// Set on the restart: the kernels OpenBLAS had picked, and the OpenBLAS build it replaced.
constexpr const char* kRestartedFrom = "DETKIT_OPENBLAS_PICKED";
constexpr const char* kReplacedBuild = "DETKIT_OPENBLAS_REPLACED";
// The kernels OpenBLAS had picked when switch_to_better_openblas_kernels replaced them in this
// process ("" when it did not): for the report.
std::string& switched_from() {
  static std::string picked;
  return picked;
}

bool is_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The resolved path of the loaded libopenblas ("" when unknown).
std::string loaded_openblas_path() {
  void* symbol = dlsym(RTLD_DEFAULT, "openblas_get_config");
  Dl_info info;
  if (!symbol || !dladdr(symbol, &info) || !info.dli_fname) return "";
  char resolved[PATH_MAX];
  return realpath(info.dli_fname, resolved) ? resolved : "";
}
}  // namespace

std::string openblas_corename() {
  const char* name = call_string_function("openblas_get_corename");
  return name ? name : "";
}

namespace {
// The widest instruction set of OpenBLAS 0.3.21's x86-64 kernels, by the name it reports
// (openblas_get_corename): 3 AVX-512, 2 AVX2 + FMA, 1 AVX, 0 SSE only; -1 a name not listed.
int openblas_kernel_isa(const std::string& corename) {
  static const std::array<std::pair<const char*, int>, 27> kIsa = {{
      {"SkylakeX", 3},   {"Cooperlake", 3},  {"SapphireRapids", 3}, {"Haswell", 2},
      {"Zen", 2},        {"Excavator", 2},   {"Sandybridge", 1},    {"Bulldozer", 1},
      {"Piledriver", 1}, {"Steamroller", 1}, {"Prescott", 0},       {"Core2", 0},
      {"Penryn", 0},     {"Dunnington", 0},  {"Nehalem", 0},        {"Atom", 0},
      {"Katmai", 0},     {"Coppermine", 0},  {"Northwood", 0},      {"Banias", 0},
      {"Athlon", 0},     {"Opteron", 0},     {"Opteron(SSE3)", 0},  {"Barcelona", 0},
      {"Nano", 0},       {"Bobcat", 0},      {"Unknown", 0},
  }};
  for (const auto& [name, isa] : kIsa)
    if (corename == name) return isa;
  return -1;
}

// This CPU's widest instruction set on the same scale (AVX-only CPUs read as 0: not told apart).
int cpu_isa(const CpuFeatures& cpu) {
  if (cpu.avx512f && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl) return 3;
  return cpu.avx2 && cpu.fma ? 2 : 0;
}

const char* isa_name(int isa) {
  static const std::array<const char*, 4> kNames = {"SSE", "AVX", "AVX2", "AVX-512"};
  return kNames.at(isa);
}
}  // namespace

std::optional<std::string> narrower_openblas_kernels_warning(const std::string& user_coretype,
                                                             const std::string& corename,
                                                             const CpuFeatures& cpu) {
  const int kernels = openblas_kernel_isa(corename), has = cpu_isa(cpu);
  if (user_coretype.empty() || kernels < 0 || kernels >= has) return std::nullopt;
  return "OPENBLAS_CORETYPE=" + user_coretype + " (set in the environment; detkit keeps it) runs " +
         "OpenBLAS's " + corename + " kernels (" + isa_name(kernels) + ") on a CPU with " +
         isa_name(has) + ": Linear layers and transposed convolutions run slower (AMD EPYC Zen 5, " +
         "2 threads: a 2048^2 matmul at 241 GFLOPS on Haswell's kernels and 434 on Cooperlake's, " +
         "OpenBLAS's own choice there; Mask R-CNN R50 inference 1.11-1.18x faster on those; " +
         "docs/BENCHMARKS.md). Unset OPENBLAS_CORETYPE to let OpenBLAS choose (detkit asks for " +
         (has == 3 ? "SkylakeX" : "Haswell") +
         " where OpenBLAS would fall back to generic kernels).";
}

std::optional<std::string> narrower_openblas_kernels_warning() {
  if (std::getenv(kRestartedFrom)) return std::nullopt;  // set by detkit's restart, not the user
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  return narrower_openblas_kernels_warning(user ? user : "", openblas_corename(), cpu_features());
}

OpenblasThreading openblas_threading() {
  using Get = int (*)();
  auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
  if (!get) return OpenblasThreading::kNone;
  switch (get()) {
    case 0:
      return OpenblasThreading::kSequential;
    case 1:
      return OpenblasThreading::kPthreads;
    case 2:
      return OpenblasThreading::kOpenmp;
    default:
      return OpenblasThreading::kNone;
  }
}

std::optional<std::string> openmp_openblas_dir(const std::string& library,
                                               OpenblasThreading threading) {
  if (threading != OpenblasThreading::kPthreads) return std::nullopt;
  const std::string marker = "/openblas-pthread/";
  const size_t at = library.rfind(marker);
  if (at == std::string::npos) return std::nullopt;
  const std::string dir = library.substr(0, at) + "/openblas-openmp";
  if (!is_file(dir + "/libopenblas.so.0") || !is_file(dir + "/libblas.so.3")) return std::nullopt;
  return dir;
}

void restart_with_better_blas(char** argv) {
  if (std::getenv(kRestartedFrom) || std::getenv(kReplacedBuild)) return;  // restarted already
  bool restart = false;
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  const std::string picked = openblas_corename();
  if (!(user && *user)) {  // else the user's choice
    if (const auto better = better_openblas_coretype(picked, cpu_features())) {
      setenv("OPENBLAS_CORETYPE", better->c_str(), 1);
      setenv(kRestartedFrom, picked.c_str(), 1);
      restart = true;
    }
  }
  const char* threading = std::getenv("DETKIT_OPENBLAS_THREADING");
  const std::string library = loaded_openblas_path();
  const auto openmp = (threading && std::string(threading) == "keep")
                          ? std::nullopt
                          : openmp_openblas_dir(library, openblas_threading());
  const char* old_path = std::getenv("LD_LIBRARY_PATH");
  const std::string saved_path = old_path ? old_path : "";
  if (openmp) {
    const std::string path = saved_path.empty() ? *openmp : *openmp + ":" + saved_path;
    setenv("LD_LIBRARY_PATH", path.c_str(), 1);
    setenv(kReplacedBuild, library.c_str(), 1);
    restart = true;
  }
  if (!restart) return;
  execv("/proc/self/exe", argv);
  // The restart failed: go on as loaded, and say so in the report (nothing marked as changed).
  if (!(user && *user)) unsetenv("OPENBLAS_CORETYPE");
  if (old_path)
    setenv("LD_LIBRARY_PATH", old_path, 1);
  else
    unsetenv("LD_LIBRARY_PATH");
  unsetenv(kRestartedFrom);
  unsetenv(kReplacedBuild);
}

std::optional<std::string> switch_to_better_openblas_kernels() {
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if (user && *user) return std::nullopt;  // the user's choice
  const std::string picked = openblas_corename();
  const auto better = better_openblas_coretype(picked, cpu_features());
  using Entry = void (*)();
  auto quit = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (!better || !quit || !init) return std::nullopt;
  // init reads OPENBLAS_CORETYPE only when quit has cleared the table; the variable is removed
  // again after, so that programs this one starts choose for themselves.
  setenv("OPENBLAS_CORETYPE", better->c_str(), 1);
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");
  switched_from() = picked;
  return openblas_corename();
}

std::string blas_kernel_report() {
  const char* config = call_string_function("openblas_get_config");
  if (!config) return "BLAS: not OpenBLAS (libtorch's own choice)";
  std::string line = std::string("BLAS: ") + config + "; kernels " + openblas_corename();
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if (const char* picked = std::getenv(kRestartedFrom))
    line += std::string(" (OPENBLAS_CORETYPE set by detkit: OpenBLAS picked its generic ") +
            picked + " kernels for this CPU)";
  else if (!switched_from().empty())
    line += " (switched by detkit in this process: OpenBLAS picked its generic " +
            switched_from() + " kernels for this CPU)";
  else if (user && *user)
    line += std::string(" (OPENBLAS_CORETYPE=") + user + " set by the user: kept)";
  else
    line += " (chosen by OpenBLAS)";
  switch (openblas_threading()) {
    case OpenblasThreading::kOpenmp:
      line += "; threads: libtorch's OpenMP team";
      if (const char* replaced = std::getenv(kReplacedBuild))
        line += std::string(" (detkit loaded the OpenMP build instead of ") + replaced + ")";
      break;
    case OpenblasThreading::kPthreads:
      line += "; threads: OpenBLAS's own (pthreads build)";
      break;
    case OpenblasThreading::kSequential:
      line += "; threads: one (sequential build)";
      break;
    case OpenblasThreading::kNone:
      break;
  }
  return line;
}

}  // namespace detkit
