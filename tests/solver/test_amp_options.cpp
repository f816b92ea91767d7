// SOLVER.AMP.*: defaults, static and dynamic loss scales, and every refused value named by key.
#include <gtest/gtest.h>

#include "detkit/config/defaults.h"
#include "detkit/solver/amp.h"
#include "detkit/utils/error.h"
#include "tests/support/error_of.h"

namespace detkit::solver {
namespace {

AmpOptions read(const std::vector<std::string>& overrides) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"MODEL.DEVICE", "cpu"});
  cfg.merge_from_list(overrides);
  return amp_options_from_config(cfg);
}

std::string error_of(const std::vector<std::string>& overrides) {
  const std::string message = testing::error_of([&] { read(overrides); });
  std::cout << "[ refused ] " << message << "\n";
  return message;
}

TEST(AmpOptions, DefaultsAreOffBfloat16AndADynamicScale) {
  const AmpOptions o = read({});
  EXPECT_FALSE(o.enabled);
  EXPECT_EQ(o.precision, c10::kBFloat16);
  EXPECT_TRUE(o.loss_scale.dynamic());
  EXPECT_EQ(o.loss_scale.init_scale(), 65536.0);
  EXPECT_EQ(o.loss_scale.growth_interval(), 2000);
}

TEST(AmpOptions, ANumberIsAStaticScale) {
  const AmpOptions o = read({"SOLVER.AMP.ENABLED", "True", "SOLVER.AMP.LOSS_SCALE", "64"});
  EXPECT_TRUE(o.enabled);
  EXPECT_FALSE(o.loss_scale.dynamic());
  EXPECT_EQ(o.loss_scale.init_scale(), 64.0);
  EXPECT_EQ(read({"SOLVER.AMP.LOSS_SCALE", "0.5"}).loss_scale.init_scale(), 0.5);
}

TEST(AmpOptions, OptLevelO1IsTheDefaultAndO2IsRead) {
  EXPECT_EQ(read({}).opt_level, OptLevel::O1);
  EXPECT_EQ(read({"SOLVER.AMP.OPT_LEVEL", "O2"}).opt_level, OptLevel::O2);
}

TEST(AmpOptions, RefusedValuesNameTheirKey) {
  for (const char* scale : {"0", "-64", "inf", "nan", "sixty-four", "64x", ""})
    EXPECT_NE(error_of({"SOLVER.AMP.LOSS_SCALE", scale}).find("SOLVER.AMP.LOSS_SCALE must be"),
              std::string::npos)
        << scale;
  EXPECT_NE(error_of({"SOLVER.AMP.PRECISION", "float16"})
                .find("SOLVER.AMP.PRECISION is 'float16', but CPU autocast"),
            std::string::npos);
  EXPECT_NE(error_of({"SOLVER.AMP.PRECISION", "fp8"}).find("SOLVER.AMP.PRECISION must be"),
            std::string::npos);
  EXPECT_NE(error_of({"SOLVER.AMP.OPT_LEVEL", "O3"}).find("SOLVER.AMP.OPT_LEVEL must be"),
            std::string::npos);
}

TEST(AmpOptions, TheLogSaysOnWhichCpusBfloat16IsSlower) {
  CpuFeatures amx, amd_bf16, intel_bf16, neither;
  amx.amx_bf16 = amx.avx512_bf16 = true;
  amd_bf16.avx512_bf16 = amd_bf16.amd = true;
  intel_bf16.avx512_bf16 = true;
  EXPECT_NE(bfloat16_on_cpu_note(amx).text.find("AMX tile units (amx_bf16), faster"),
            std::string::npos);
  EXPECT_NE(bfloat16_on_cpu_note(amd_bf16).text.find("faster than float32 (AMD EPYC Zen 4"),
            std::string::npos);
  for (const CpuFeatures& cpu : {amx, amd_bf16}) EXPECT_FALSE(bfloat16_on_cpu_note(cpu).slower);
  EXPECT_NE(bfloat16_on_cpu_note(intel_bf16).text.find("slower than float32 here"),
            std::string::npos);
  EXPECT_NE(bfloat16_on_cpu_note(neither).text.find("without bfloat16 instructions"),
            std::string::npos);
  for (const CpuFeatures& cpu : {intel_bf16, neither}) {
    const Bfloat16Note note = bfloat16_on_cpu_note(cpu);
    EXPECT_TRUE(note.slower);
    EXPECT_NE(note.text.find("AMP pays on CPUs with AMX"), std::string::npos) << note.text;
  }
  std::cout << "this CPU: " << bfloat16_on_cpu_note(cpu_features()).text << "\n";
}

}  // namespace
}  // namespace detkit::solver
