// After one training step on the Detectron2 fixture (FREEZE_AT 2: stem and res2 frozen), every
// trainable parameter has a non-zero gradient and no frozen parameter has one. The test names
// every parameter that breaks either rule.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "tests/modeling/meta_arch/fixture_targets.h"
#include "tests/support/detectron2_fixture.h"

namespace detkit::modeling {

TEST(GradientFlow, ReachesEveryTrainableParameterAndNoFrozenOne) {
  testing::Detectron2Fixture fx;
  if (!fx.present()) GTEST_SKIP() << "fixture absent: " << fx.dir;
  auto model = build_model(fx.config());
  auto report = checkpoint::load_state_dict(*model, fx.weights());
  ASSERT_TRUE(report.complete()) << report.summary();
  model->train();
  auto losses = model->losses(testing::fixture_training_batch(fx));
  at::Tensor total = at::zeros({});
  for (const auto& [name, loss] : losses) total = total + loss;
  total.backward();

  std::vector<std::string> without_gradient, frozen_with_gradient;
  int64_t trainable = 0, frozen = 0;
  for (const auto& p : model->named_parameters()) {
    const at::Tensor& grad = p.value().grad();
    if (p.value().requires_grad()) {
      ++trainable;
      if (!grad.defined() || grad.abs().sum().item<double>() == 0.0)
        without_gradient.push_back(p.key());
    } else {
      ++frozen;
      if (grad.defined()) frozen_with_gradient.push_back(p.key());
    }
    bool frozen_stage = p.key().rfind("backbone.bottom_up.stem.", 0) == 0 ||
                        p.key().rfind("backbone.bottom_up.res2.", 0) == 0;
    EXPECT_EQ(p.value().requires_grad(), !frozen_stage) << p.key();
  }
  std::cout << "[ gradient flow ] " << trainable << " trainable parameters, "
            << without_gradient.size() << " without gradient; " << frozen << " frozen, "
            << frozen_with_gradient.size() << " with gradient\n";
  EXPECT_TRUE(without_gradient.empty())
      << "no gradient: " << ::testing::PrintToString(without_gradient);
  EXPECT_TRUE(frozen_with_gradient.empty())
      << "frozen but with gradient: " << ::testing::PrintToString(frozen_with_gradient);
  EXPECT_GT(frozen, 0);
  EXPECT_GT(trainable, frozen);
}

}  // namespace detkit::modeling
