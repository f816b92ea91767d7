// The validation pass: the same batches every time (the same losses for the same weights), and
// a config without DATASETS.TEST is refused by key.
#include <gtest/gtest.h>

#include "detkit/engine/validation_loss.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/utils/error.h"
#include "tests/support/tiny_shapes.h"

namespace detkit::engine {
namespace {

TEST(ValidationLoss, APassIsTheSameEveryTimeAndLeavesTheModelAsItWas) {
  testing::TinySetup setup("validation_loss");
  const config::CfgNode cfg = testing::tiny_config(setup, "validation_loss");
  auto model = modeling::build_model(cfg);
  model->train();
  const ValidationLossHook hook(cfg, 1);
  const auto first = hook.validation_losses(*model);
  const auto second = hook.validation_losses(*model);
  EXPECT_EQ(first, second);
  for (const char* key : {"loss_cls", "loss_box_reg", "loss_mask", "total_loss"})
    EXPECT_TRUE(first.count(key)) << key;
  std::cout << "[ validation ] total_loss " << first.at("total_loss") << " (twice)\n";

  config::CfgNode no_test = cfg;
  no_test.merge_from_list({"DATASETS.TEST", "()"});
  try {
    ValidationLossHook(no_test, 20);
    FAIL() << "no DATASETS.TEST was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TEST.VAL_LOSS_PERIOD is 20 but DATASETS.TEST is empty"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace detkit::engine
