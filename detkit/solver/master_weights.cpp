#include "detkit/solver/master_weights.h"

#include <ATen/ATen.h>

#include "detkit/utils/error.h"

namespace detkit::solver {

MasterWeights::MasterWeights(Optimizer& optimizer,
                             const std::unordered_set<const c10::TensorImpl*>& keep_fp32,
                             c10::ScalarType dtype) {
  if (dtype == at::kFloat) throw Error("fp32 master weights need a reduced precision, got float");
  at::NoGradGuard no_grad;
  for (size_t g = 0; g < optimizer.num_groups(); ++g) {
    OptimizerGroup& group = optimizer.group(g);
    for (size_t i = 0; i < group.params.size(); ++i) {
      at::Tensor& p = group.params[i];
      model_.push_back(p);
      if (p.scalar_type() != at::kFloat || keep_fp32.count(p.unsafeGetTensorImpl())) continue;
      at::Tensor master = p.detach().clone().requires_grad_(true);
      p.set_data(p.detach().to(dtype));  // the module's tensor itself, now in `dtype`
      cast_.push_back({group.names.at(i), p, master});
      p = master;
    }
  }
}

void MasterWeights::gradients_to_masters() {
  at::NoGradGuard no_grad;
  for (Cast& c : cast_) {
    if (c.model.grad().defined()) {
      c.master.mutable_grad() = c.model.grad().to(at::kFloat);
      c.model.mutable_grad().reset();
    } else {
      c.master.mutable_grad().reset();
    }
  }
}

void MasterWeights::masters_to_model() {
  at::NoGradGuard no_grad;
  for (Cast& c : cast_) c.model.copy_(c.master);
}

std::map<std::string, at::Tensor> MasterWeights::masters_by_name() const {
  std::map<std::string, at::Tensor> out;
  for (const Cast& c : cast_) out[c.name] = c.master.detach();
  return out;
}

}  // namespace detkit::solver
