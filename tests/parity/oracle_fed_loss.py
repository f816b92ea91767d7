"""Parity oracle for the box predictor's sigmoid cross-entropy and federated losses
(detkit/modeling/roi_heads/fed_loss.h), on tensors saved by tests/parity/oracle.cpp.

Written here from Detectron2's formulas (detectron2/modeling/roi_heads/fast_rcnn.py:
FastRCNNOutputLayers.sigmoid_cross_entropy_loss, get_fed_loss_classes, predict_probs;
detectron2/data/detection_utils.py: get_fed_loss_cls_weights), because Detectron2 itself is not
installed.

Usage: python3 oracle_fed_loss.py IN.pt OUT.pt fed_loss
IN.pt: logits (R, K + 1) float32, gt_classes (R) int64, counts (K) int64 (class_image_count by
contiguous id), fed_classes (F) int64 (a fixed set of federated classes for the loss), params
[power, num_fed_loss_classes, seed] float64.
OUT.pt: weights (K) float32; drawn, the federated classes drawn after torch.manual_seed(seed);
loss_sigmoid / grad_sigmoid, loss_fed / grad_fed (with fed_classes): the loss and its gradient
with respect to the logits; probs (R, K + 1), the sigmoid scores.
"""
import sys

import torch
import torch.nn.functional as F


def class_weights(counts, power):
    # get_fed_loss_cls_weights: image counts in id order, as float32, to the power.
    return counts.float() ** power


def draw_classes(gt_classes, num_fed, num_classes, weight):
    # get_fed_loss_classes
    unique = torch.unique(gt_classes)
    prob = unique.new_ones(num_classes + 1).float()
    prob[-1] = 0
    if len(unique) >= num_fed:
        return unique
    prob[:num_classes] = weight.float().clone()
    prob[unique] = 0
    sampled = torch.multinomial(prob, num_fed - len(unique), replacement=False)
    return torch.cat([unique, sampled])


def sigmoid_ce(logits, gt_classes, fed_classes):
    # sigmoid_cross_entropy_loss; fed_classes None: every class counts.
    n, k = logits.shape[0], logits.shape[1] - 1
    target = logits.new_zeros(n, k + 1)
    target[range(len(gt_classes)), gt_classes] = 1
    target = target[:, :k]
    loss = F.binary_cross_entropy_with_logits(logits[:, :-1], target, reduction="none")
    weight = 1
    if fed_classes is not None:
        mask = fed_classes.new_zeros(k + 1)
        mask[fed_classes] = 1
        weight = mask[:k].view(1, k).expand(n, k).float()
    return torch.sum(loss * weight) / n


def fed_loss(t):
    power, num_fed, seed = t["params"].tolist()
    logits, gt = t["logits"], t["gt_classes"]
    k = logits.shape[1] - 1
    weights = class_weights(t["counts"], power)
    torch.manual_seed(int(seed))
    drawn = draw_classes(gt, int(num_fed), k, weights)
    out = {"weights": weights, "drawn": drawn, "probs": logits.sigmoid()}
    for name, classes in (("sigmoid", None), ("fed", t["fed_classes"])):
        x = logits.clone().requires_grad_(True)
        loss = sigmoid_ce(x, gt, classes)
        loss.backward()
        out["loss_" + name] = loss.detach().reshape(1)
        out["grad_" + name] = x.grad
    return out


MODES = {"fed_loss": fed_loss}


def main():
    in_path, out_path, mode = sys.argv[1:4]
    torch.set_num_threads(1)
    result = {k: v.contiguous() for k, v in MODES[mode](torch.load(in_path, weights_only=False)).items()}
    torch.save(result, out_path)


if __name__ == "__main__":
    main()
