#include "detkit/solver/amp.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

c10::ScalarType parse_precision(const std::string& text, const std::string& device) {
  if (text == "bfloat16") return c10::kBFloat16;
  if (text == "float16") {
    if (device.rfind("cpu", 0) == 0)
      throw Error(
          "SOLVER.AMP.PRECISION is 'float16', but CPU autocast in this libtorch runs bfloat16 "
          "only (MODEL.DEVICE is '" + device + "'): use bfloat16");
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
  return o;
}

}  // namespace detkit::solver
