#pragma once
// The Detectron2 multi-step fixture (../shared/fixtures/detectron2_bn_train): a narrowed Mask
// R-CNN with trainable BatchNorm, Detectron2's own initialisation, and 12 consecutive SGD steps on
// one two-image batch, once with the 1000-iteration warm-up ("warmup1000") and once at a constant
// LR 0.01 ("warmup0"). Its README gives the run-to-run tolerances the tests use. weights() and
// outputs() read its weights.pth and outputs.pth, as for the one-step fixture.
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/detectron2_fixture.h"

namespace detkit::testing {

struct BnTrainFixture : Detectron2Fixture {
  BnTrainFixture() { dir = std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_bn_train/"; }

  /// "warmup1000" reads config.yaml, "warmup0" config_warmup0.yaml (WARMUP_ITERS 0).
  config::CfgNode config(const std::string& sequence) const {
    config::CfgNode cfg = config::get_cfg();
    cfg.merge_from_file(dir + (sequence == "warmup0" ? "config_warmup0.yaml" : "config.yaml"));
    return cfg;
  }
  const nlohmann::json& meta() {
    if (meta_.is_null()) meta_ = nlohmann::json::parse(std::ifstream(dir + "outputs.json"));
    return meta_;
  }
  /// meta()["sequences"][sequence]["steps"][step]
  const nlohmann::json& step(const std::string& sequence, size_t step) {
    return meta()["sequences"][sequence]["steps"][step];
  }

 private:
  nlohmann::json meta_;
};

}  // namespace detkit::testing
