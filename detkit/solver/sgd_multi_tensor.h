#pragma once
// SGD's update of many parameters in one call of torch's multi-tensor kernel (at::_fused_sgd_,
// what torch.optim.SGD(fused=True) runs): on a GPU one launch for a parameter group instead of
// the four or five per parameter of the op-by-op path. The same arithmetic as torch.optim.SGD:
//   d = grad + weight_decay * param
//   buffer = d on the first step, else momentum * buffer + (1 - dampening) * d   (momentum != 0)
//   d = nesterov ? d + momentum * buffer : buffer                                 (momentum != 0)
//   param -= lr * d
#include <ATen/ATen.h>

#include <vector>

namespace detkit::solver {

struct MultiTensorSgd {
  double lr = 0;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

/// True for a tensor the multi-tensor kernel takes here: float32, dense, contiguous, on a GPU.
bool multi_tensor_sgd_takes(const at::Tensor& t);

/// Updates `params` in place from `grads`, with `buffers` (one per parameter, the same shapes;
/// ignored when momentum is 0). `first_step`: the buffers are started as d (their contents are
/// not read), as torch.optim.SGD starts a missing buffer.
void multi_tensor_sgd(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads,
                      const std::vector<at::Tensor>& buffers, const MultiTensorSgd& options,
                      bool first_step);

}  // namespace detkit::solver
