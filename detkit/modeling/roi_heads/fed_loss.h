#pragma once
// The box predictor's sigmoid cross-entropy classification loss and its federated variant
// (Detectron2's FastRCNNOutputLayers with use_sigmoid_ce / use_fed_loss, after CenterNet2's
// fed_loss, for LVIS): each of the K foreground classes is a binary classifier, background is the
// all-zero target, and the background column of the logits is not used. The federated loss keeps,
// per batch, only the columns of the classes present in it plus foreground classes drawn at
// random in proportion to their frequency weights, FED_LOSS_NUM_CLASSES in all.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace detkit::modeling {

/// logits: (R, K + 1), background last; gt_classes: (R) in [0, K]; class_mask: (K), 1 for the
/// columns that count (the federated classes) and 0 for the others, or undefined for all.
/// sum over rows and columns of BCE-with-logits(logits[:, :K], one_hot(gt_classes)[:, :K]) *
/// class_mask, / R; 0 (still a function of the logits) when R is 0.
at::Tensor sigmoid_cross_entropy_loss(const at::Tensor& logits, const at::Tensor& gt_classes,
                                      const at::Tensor& class_mask = {});

/// Detectron2's get_fed_loss_classes: the sorted unique values of gt_classes (background K
/// included when present), then, when they are fewer than num_fed_loss_classes, as many more as
/// make up the difference, drawn without replacement (torch.multinomial, on the default generator
/// of the device) from the foreground classes not among them with probability in proportion to
/// weights (K). Where Detectron2's draw would fail (more classes asked for than K + 1, or every
/// weight left 0 because every foreground class is present), every class is kept.
at::Tensor fed_loss_classes(const at::Tensor& gt_classes, int64_t num_fed_loss_classes,
                            const at::Tensor& weights);

/// (K) float: 1 at the foreground classes among `classes`, 0 elsewhere (background K dropped).
at::Tensor fed_loss_class_mask(const at::Tensor& classes, int64_t num_classes);

}  // namespace detkit::modeling
