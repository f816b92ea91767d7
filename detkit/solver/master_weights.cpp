#include "detkit/solver/master_weights.h"

#include <ATen/ATen.h>

#include "detkit/utils/error.h"

namespace detkit::solver {

MasterWeights::MasterWeights(Optimizer& optimizer,
                             const std::unordered_set<const c10::TensorImpl*>& keep_fp32,
                             c10::ScalarType dtype)
    : optimizer_(optimizer) {
  if (dtype == at::kFloat) throw Error("fp32 master weights need a reduced precision, got float");
  at::NoGradGuard no_grad;
  for (size_t g = 0; g < optimizer_.num_groups(); ++g) {
    OptimizerGroup& group = optimizer_.group(g);
    for (at::Tensor& p : group.params) {
      model_.push_back(p);
      if (p.scalar_type() != at::kFloat || keep_fp32.count(p.unsafeGetTensorImpl())) continue;
      at::Tensor master = p.detach().clone().requires_grad_(true);
      p.set_data(p.detach().to(dtype));  // the module's tensor itself, now in `dtype`
      p = master;
      ++num_cast_;
    }
  }
}

void MasterWeights::gradients_to_masters() {
  at::NoGradGuard no_grad;
  size_t k = 0;
  for (size_t g = 0; g < optimizer_.num_groups(); ++g)
    for (at::Tensor& master : optimizer_.group(g).params) {
      at::Tensor& model = model_[k++];
      if (model.is_same(master)) continue;
      if (model.grad().defined()) {
        master.mutable_grad() = model.grad().to(at::kFloat);
        model.mutable_grad().reset();
      } else {
        master.mutable_grad().reset();
      }
    }
}

void MasterWeights::masters_to_model() {
  at::NoGradGuard no_grad;
  size_t k = 0;
  for (size_t g = 0; g < optimizer_.num_groups(); ++g)
    for (const at::Tensor& master : optimizer_.group(g).params) {
      at::Tensor& model = model_[k++];
      if (!model.is_same(master)) model.copy_(master);
    }
}

std::map<std::string, at::Tensor> MasterWeights::masters_by_name() const {
  std::map<std::string, at::Tensor> out;
  size_t k = 0;
  for (size_t g = 0; g < optimizer_.num_groups(); ++g) {
    const OptimizerGroup& group = optimizer_.group(g);
    for (size_t i = 0; i < group.params.size(); ++i) {
      if (!model_[k++].is_same(group.params[i])) out[group.names.at(i)] = group.params[i].detach();
    }
  }
  return out;
}

}  // namespace detkit::solver
