#include "detkit/modeling/roi_heads/fed_loss.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace detkit::modeling {

at::Tensor sigmoid_cross_entropy_loss(const at::Tensor& logits, const at::Tensor& gt_classes,
                                      const at::Tensor& class_mask) {
  TORCH_CHECK(logits.dim() == 2 && logits.size(1) >= 1,
              "sigmoid_cross_entropy_loss: logits must be (R, K + 1), got ", logits.sizes());
  TORCH_CHECK(gt_classes.dim() == 1 && gt_classes.size(0) == logits.size(0),
              "sigmoid_cross_entropy_loss: gt_classes must be (", logits.size(0), "), got ",
              gt_classes.sizes());
  const int64_t num_rois = logits.size(0), num_classes = logits.size(1) - 1;
  TORCH_CHECK(!class_mask.defined() || class_mask.sizes() == at::IntArrayRef{num_classes},
              "sigmoid_cross_entropy_loss: class_mask must be (", num_classes, "), got ",
              class_mask.sizes());
  if (num_rois == 0) return logits.sum() * 0.0;
  // One-hot over K + 1 columns, then background's dropped: background is all zeros.
  at::Tensor target = at::zeros({num_rois, num_classes + 1}, logits.options());
  target.scatter_(1, gt_classes.view({-1, 1}), 1.0);
  const at::Tensor foreground = logits.narrow(1, 0, num_classes);
  at::Tensor loss = at::binary_cross_entropy_with_logits(
      foreground, target.narrow(1, 0, num_classes), {}, {}, at::Reduction::None);
  if (class_mask.defined()) loss = loss * class_mask.to(loss.scalar_type()).view({1, num_classes});
  return loss.sum() / static_cast<double>(num_rois);
}

at::Tensor fed_loss_classes(const at::Tensor& gt_classes, int64_t num_fed_loss_classes,
                            const at::Tensor& weights) {
  TORCH_CHECK(weights.dim() == 1, "fed_loss_classes: weights must be (K), got ", weights.sizes());
  TORCH_CHECK(num_fed_loss_classes >= 1,
              "fed_loss_classes: num_fed_loss_classes must be >= 1, got ", num_fed_loss_classes);
  const int64_t num_classes = weights.size(0);
  const at::Tensor unique = std::get<0>(at::_unique2(gt_classes, /*sorted=*/true));
  if (unique.numel() >= num_fed_loss_classes) return unique;
  // Present classes and background get probability 0.
  at::Tensor prob = at::zeros({num_classes + 1}, gt_classes.options().dtype(at::kFloat));
  prob.narrow(0, 0, num_classes).copy_(weights.to(at::kFloat));
  prob.index_fill_(0, unique, 0.0);
  // The draw uses torch's default generator as Detectron2's does, but detkit's trainer reseeds
  // the CPU one every iteration (engine/trainer.cpp) and draws the ROI samples from per-image
  // generators (modeling/sampling.h), so the generator's state here is not the one Detectron2
  // would have: the same distribution (a weighted draw without replacement), other classes drawn.
  // torch.multinomial without replacement takes classes of weight 0 once those of positive weight
  // run out, and refuses more than there are, or a draw where every weight is 0 (every foreground
  // class present): both keep every class here. The draw is on the host (the CPU generator the
  // trainer seeds), so that a model on a GPU draws the classes it would on the CPU.
  const int64_t wanted = std::min(num_fed_loss_classes - unique.numel(), num_classes + 1);
  const at::Tensor sampled =
      prob.sum().item<double>() > 0
          ? at::multinomial(prob.cpu(), wanted, /*replacement=*/false).to(prob.device())
          : at::arange(num_classes + 1, unique.options());
  return at::cat({unique, sampled});
}

at::Tensor fed_loss_class_mask(const at::Tensor& classes, int64_t num_classes) {
  at::Tensor mask = at::zeros({num_classes + 1}, classes.options().dtype(at::kFloat));
  mask.index_fill_(0, classes, 1.0);
  return mask.narrow(0, 0, num_classes);
}

}  // namespace detkit::modeling
