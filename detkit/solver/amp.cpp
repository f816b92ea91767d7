#include "detkit/solver/amp.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdlib>
#include <mutex>

#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

c10::ScalarType parse_precision(const std::string& text, const std::string& device) {
  if (text == "bfloat16") return c10::kBFloat16;
  if (text == "float16") {
    if (device.rfind("cpu", 0) == 0)
      throw Error(
          "SOLVER.AMP.PRECISION is 'float16', but CPU autocast in detkit runs bfloat16 only "
          "(float16 needs a gradient scaler, which detkit's CPU training has not) (MODEL.DEVICE "
          "is '" +
          device + "'): use bfloat16");
    return c10::kHalf;
  }
  throw Error("SOLVER.AMP.PRECISION must be 'bfloat16' or 'float16', got '" + text + "'");
}

GradScalerOptions parse_loss_scale(const std::string& text) {
  if (text == "dynamic") return GradScalerOptions{};
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value <= 0)
    throw Error("SOLVER.AMP.LOSS_SCALE must be 'dynamic' or a positive number (a static scale, "
                "e.g. 64), got '" + text + "'");
  return GradScalerOptions{}.init_scale(value).dynamic(false);
}

}  // namespace

Bfloat16Note bfloat16_on_cpu_note(const CpuFeatures& cpu) {
  const std::string pays =
      " AMP pays on CPUs with AMX (amx_bf16 in lscpu: Intel Sapphire Rapids and later) and on AMD "
      "Zen 4 and Zen 5 (docs/BENCHMARKS.md)";
  if (cpu.amx_bf16)
    return {false,
            "SOLVER.AMP.ENABLED: bfloat16 on this CPU's AMX tile units (amx_bf16), faster than "
            "float32 (Mask R-CNN R50 training 1.5x, inference 1.8x on an AMX CPU; "
            "docs/BENCHMARKS.md)"};
  if (cpu.avx512_bf16 && cpu.amd)
    return {false,
            "SOLVER.AMP.ENABLED: bfloat16 on this AMD CPU's AVX-512 bfloat16 instructions "
            "(avx512_bf16), faster than float32 (AMD EPYC Zen 4, 2 threads: Mask R-CNN R50 "
            "training 1.15-1.17x, inference 1.37-1.39x float32's images/s, 0.82-0.86x and 0.78x its "
            "peak memory; Zen 5: training 1.14-1.15x, inference 1.09-1.15x, 0.92x and 0.89-0.90x; "
            "docs/BENCHMARKS.md)"};
  if (cpu.avx512_bf16)
    return {true,
            "SOLVER.AMP.ENABLED runs bfloat16 slower than float32 here: this CPU has AVX-512's "
            "bfloat16 instructions (avx512_bf16) but no AMX tile units, where oneDNN's bfloat16 "
            "kernels ran slower than its float32 ones (Intel Emerald Rapids without AMX: a 3x3 "
            "convolution 165 GFLOPS against 231, a 2048^2 matmul 145 against 238). "
            "SOLVER.AMP.ENABLED False is faster on this CPU." + pays};
  return {true,
          "SOLVER.AMP.ENABLED on a CPU without bfloat16 instructions (neither amx_bf16 nor "
          "avx512_bf16): oneDNN converts bfloat16 in software, expected slower than float32 "
          "(not measured: compare with SOLVER.AMP.ENABLED False)." + pays};
}

AmpOptions amp_options_from_config(const config::CfgNode& cfg) {
  AmpOptions o;
  o.enabled = cfg.get_bool("SOLVER.AMP.ENABLED");
  o.precision = parse_precision(cfg.get_string("SOLVER.AMP.PRECISION"),
                                cfg.get_string("MODEL.DEVICE"));
  const std::string level = cfg.get_string("SOLVER.AMP.OPT_LEVEL");
  if (level == "O2")
    o.opt_level = OptLevel::O2;
  else if (level != "O1")
    throw Error("SOLVER.AMP.OPT_LEVEL must be 'O1' or 'O2', got '" + level + "'");
  o.loss_scale = parse_loss_scale(cfg.get_string("SOLVER.AMP.LOSS_SCALE"));
  if (cfg.get_string("MODEL.DEVICE").rfind("cuda", 0) == 0) o.device = c10::DeviceType::CUDA;
  if (o.enabled && o.precision == c10::kBFloat16 &&
      cfg.get_string("MODEL.DEVICE").rfind("cpu", 0) == 0) {
    static std::once_flag said;
    std::call_once(said, [] {
      const Bfloat16Note note = bfloat16_on_cpu_note(cpu_features());
      if (note.slower)
        spdlog::warn("{}", note.text);
      else
        spdlog::info("{}", note.text);
    });
  }
  return o;
}

}  // namespace detkit::solver
