#include "detkit/solver/sgd_multi_tensor.h"

#include <ATen/ops/_fused_sgd.h>

namespace detkit::solver {

bool multi_tensor_sgd_takes(const at::Tensor& t) {
  return t.is_cuda() && t.scalar_type() == at::kFloat && t.layout() == at::kStrided &&
         t.is_contiguous();
}

void multi_tensor_sgd(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads,
                      const std::vector<at::Tensor>& buffers, const MultiTensorSgd& options,
                      bool first_step) {
  if (params.empty()) return;
  const std::vector<at::Tensor> none;
  at::_fused_sgd_(params, grads, options.momentum != 0 ? buffers : none, options.weight_decay,
                  options.momentum, options.lr, options.dampening, options.nesterov,
                  /*maximize=*/false, first_step);
}

}  // namespace detkit::solver
