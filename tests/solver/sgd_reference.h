#pragma once
// torch.optim.SGD's _single_tensor_sgd, op by op: the oracle of SGD's fused and multi-tensor
// paths. H holds lr, momentum, dampening, weight_decay and nesterov.
#include <ATen/ATen.h>

namespace detkit::testing {

template <typename H>
void sgd_reference_step(at::Tensor& p, const at::Tensor& grad, at::Tensor& buf, const H& h) {
  at::Tensor d_p = grad;
  if (h.weight_decay != 0) d_p = d_p.add(p, h.weight_decay);
  if (h.momentum != 0) {
    if (!buf.defined()) {
      buf = d_p.clone();
    } else {
      buf.mul_(h.momentum).add_(d_p, 1 - h.dampening);
    }
    d_p = h.nesterov ? d_p.add(buf, h.momentum) : buf;
  }
  p.add_(d_p, -h.lr);
}

}  // namespace detkit::testing
