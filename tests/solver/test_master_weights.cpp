// O2's fp32 master weights: the model's trained weights cast to bfloat16 in place (the module's
// own tensors, hooks intact), normalisation weights left in fp32 as their own masters, the
// optimizer stepping fp32 copies that equal the weights before the cast, gradients moved to the
// masters as fp32, the masters rounded back into the model, and the masters by state-dict name.
#include "detkit/solver/master_weights.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "detkit/config/defaults.h"
#include "detkit/layers/norm.h"
#include "detkit/solver/build.h"
#include "detkit/solver/sgd.h"
#include "tests/support/error_of.h"

namespace detkit::solver {
namespace {

struct LinearNorm : torch::nn::Module {
  torch::nn::Linear fc = register_module("fc", torch::nn::Linear(4, 32));
  torch::nn::GroupNorm norm = register_module("norm", torch::nn::GroupNorm(32, 32));
  // The norm's weights take part without running GroupNorm (whose CPU kernel wants one dtype).
  at::Tensor loss(const at::Tensor& x) { return fc->forward(x).sum() + norm->weight.sum(); }
};

struct Toy {
  std::shared_ptr<LinearNorm> model = std::make_shared<LinearNorm>();
  std::unique_ptr<SGD> optimizer;
  at::Tensor weight_before;

  Toy() {
    config::CfgNode cfg = config::get_cfg();
    cfg.merge_from_list({"SOLVER.BASE_LR", "0.5", "SOLVER.WEIGHT_DECAY", "0", "SOLVER.MOMENTUM", "0"});
    optimizer = build_optimizer(cfg, *model);
    weight_before = model->fc->weight.detach().clone();
  }
};

// The optimizer's tensor for `name` (the master itself, with its gradient).
at::Tensor optimizer_tensor(SGD& optimizer, const std::string& name) {
  for (const SGDParamGroup& group : optimizer.param_groups())
    for (size_t i = 0; i < group.names.size(); ++i)
      if (group.names[i] == name) return group.params[i];
  throw std::runtime_error("no " + name);
}

TEST(MasterWeights, CastsTheModelsOwnTensorsButNormsAndGivesTheOptimizerFp32Copies) {
  Toy s;
  const c10::TensorImpl* module_weight = s.model->fc->weight.unsafeGetTensorImpl();
  MasterWeights masters(*s.optimizer, layers::normalization_parameters(*s.model), at::kBFloat16);
  EXPECT_EQ(masters.num_cast(), 2u);  // fc.weight, fc.bias
  EXPECT_EQ(s.model->fc->weight.scalar_type(), at::kBFloat16);
  EXPECT_EQ(s.model->fc->weight.unsafeGetTensorImpl(), module_weight);  // cast in place
  EXPECT_EQ(s.model->named_parameters()["fc.bias"].scalar_type(), at::kBFloat16);
  EXPECT_EQ(s.model->norm->weight.scalar_type(), at::kFloat);
  EXPECT_EQ(s.model->norm->bias.scalar_type(), at::kFloat);

  // The optimizer: the same names in the same order, every tensor fp32; fc's are copies that
  // equal the weights before the cast, the norm's are the model's own.
  const std::vector<at::Tensor> opt = s.optimizer->parameters();
  const std::vector<at::Tensor>& model = masters.model_parameters();
  ASSERT_EQ(opt.size(), model.size());
  size_t own = 0;
  for (size_t k = 0; k < opt.size(); ++k) {
    EXPECT_EQ(opt[k].scalar_type(), at::kFloat) << k;
    own += opt[k].is_same(model[k]);
  }
  EXPECT_EQ(own, 2u);
  const auto by_name = masters.masters_by_name();
  ASSERT_EQ(by_name.size(), 2u);
  EXPECT_TRUE(by_name.at("fc.weight").equal(s.weight_before));
  EXPECT_TRUE(s.model->fc->weight.equal(s.weight_before.to(at::kBFloat16)));
}

TEST(MasterWeights, AStepUpdatesTheMastersFromFp32GradientsAndRoundsThemIntoTheModel) {
  Toy s;
  MasterWeights masters(*s.optimizer, layers::normalization_parameters(*s.model), at::kBFloat16);
  const at::Tensor x = at::randn({3, 4});
  s.model->loss(x.to(at::kBFloat16)).backward();
  const at::Tensor grad = s.model->fc->weight.grad().clone();
  ASSERT_EQ(grad.scalar_type(), at::kBFloat16);
  masters.gradients_to_masters();
  EXPECT_FALSE(s.model->fc->weight.grad().defined());  // moved, not copied
  EXPECT_TRUE(s.model->norm->weight.grad().defined());  // a norm's gradient stays where it is
  const at::Tensor master = optimizer_tensor(*s.optimizer, "fc.weight");
  EXPECT_TRUE(master.equal(masters.masters_by_name().at("fc.weight")));
  ASSERT_TRUE(master.grad().defined());
  EXPECT_EQ(master.grad().scalar_type(), at::kFloat);
  EXPECT_TRUE(master.grad().equal(grad.to(at::kFloat)));

  s.optimizer->step();
  const at::Tensor expected = s.weight_before - 0.5 * grad.to(at::kFloat);
  EXPECT_TRUE(masters.masters_by_name().at("fc.weight").equal(expected));
  EXPECT_FALSE(s.model->fc->weight.equal(expected.to(at::kBFloat16)));  // not yet copied back
  masters.masters_to_model();
  EXPECT_TRUE(s.model->fc->weight.equal(expected.to(at::kBFloat16)));
}

TEST(MasterWeights, ANonFloatReducedPrecisionIsRequired) {
  Toy s;
  EXPECT_NE(testing::error_of([&] { MasterWeights(*s.optimizer, {}, at::kFloat); })
                .find("fp32 master weights need a reduced precision"),
            std::string::npos);
}

}  // namespace
}  // namespace detkit::solver
