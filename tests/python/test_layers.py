"""detkit.layers against torchvision 0.26's ops (nms, batched_nms, roi_align with its gradient,
the GIoU / DIoU / CIoU losses) and smooth L1 against its formula; errors named."""
import sys

import torch

import detkit  # noqa: F401  (registers detkit's ops)
from detkit.layers import (ROIAlign, ShapeSpec, batched_nms, cat, ciou_loss, diou_loss,
                           giou_loss, nms, nonzero_tuple, paste_masks_in_image, roi_align,
                           smooth_l1_loss)
from detkit.utils.testing import random_boxes

try:
    import torchvision.ops as tv
except ImportError:
    print("SKIPPED: torchvision (the ops' oracle, requirements.txt) is not importable")
    sys.exit(77)

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def raises(error, fn, text):
    try:
        fn()
    except error as e:
        check(text in str(e), f"{error.__name__} naming '{text}': {e}")
        return
    check(False, f"no {error.__name__} ('{text}')")


torch.manual_seed(1)
boxes = random_boxes(500, 200)
scores = torch.rand(500)
classes = torch.randint(0, 7, (500,))
for threshold in (0.3, 0.5, 0.7):
    check(torch.equal(nms(boxes, scores, threshold), tv.nms(boxes, scores, threshold)),
          f"nms at IoU {threshold} equals torchvision's")
    check(torch.equal(batched_nms(boxes, scores, classes, threshold),
                      tv.batched_nms(boxes, scores, classes, threshold)),
          f"batched_nms at IoU {threshold} equals torchvision's")
scripted = torch.jit.script(batched_nms)
check(torch.equal(scripted(boxes, scores, classes, 0.5), batched_nms(boxes, scores, classes, 0.5)),
      "batched_nms scripted")
check(nms(boxes[:0], scores[:0], 0.5).numel() == 0, "nms of no box")
raises(ValueError, lambda: nms(boxes[:, :3], scores, 0.5), "(N, 4)")
raises(ValueError, lambda: batched_nms(boxes, scores, classes[:3], 0.5), "idxs")

features = torch.rand(2, 3, 24, 32, dtype=torch.float64, requires_grad=True)
rois = torch.cat([torch.randint(0, 2, (40, 1)).double(), random_boxes(40, 60).double()], dim=1)
rois = torch.cat([rois, torch.tensor([[0, 5.0, 5.0, 5.0, 5.0], [1, -10.0, -10.0, 80.0, 90.0]],
                                     dtype=torch.float64)])
worst = worst_grad = 0.0
for aligned in (False, True):
    for sampling in (0, 2):
        ours = roi_align(features, rois, (7, 7), 0.5, sampling, aligned)
        reference = tv.roi_align(features, rois, (7, 7), 0.5, sampling, aligned)
        worst = max(worst, (ours - reference).abs().max().item())
        weights = torch.rand_like(ours)
        (g_ours,) = torch.autograd.grad((ours * weights).sum(), features)
        (g_ref,) = torch.autograd.grad((reference * weights).sum(), features)
        worst_grad = max(worst_grad, (g_ours - g_ref).abs().max().item())
print(f"roi_align vs torchvision (float64, aligned and not, sampling 0 and 2, an empty and an "
      f"outside box): max abs diff {worst:.3g}, gradients {worst_grad:.3g}")
check(worst < 1e-10 and worst_grad < 1e-10, "roi_align and its gradient equal torchvision's")
module = ROIAlign((5, 5), 0.25, 0, aligned=True)
per_image = [random_boxes(3, 60).double(), random_boxes(2, 60).double()]
listed = module(features, per_image)
check(listed.shape == (5, 3, 5, 5) and torch.allclose(
    listed, tv.roi_align(features, per_image, (5, 5), 0.25, 0, True)),
    "ROIAlign on a list of boxes per image")
raises(ValueError, lambda: module(features[0], per_image), "(N, C, H, W)")
raises(ValueError, lambda: roi_align(features, rois[:, :4], 7, 1.0, 0), "(K, 5)")

predicted = random_boxes(64, 100).double().requires_grad_()
target = random_boxes(64, 100).double()
target[:8] = predicted[:8].detach() + 1.0  # overlapping pairs
for name, ours_fn, reference_fn in (("giou", giou_loss, tv.generalized_box_iou_loss),
                                    ("diou", diou_loss, tv.distance_box_iou_loss),
                                    ("ciou", ciou_loss, tv.complete_box_iou_loss)):
    ours = ours_fn(predicted, target, reduction="none")
    reference = reference_fn(predicted, target, reduction="none")
    (g_ours,) = torch.autograd.grad(ours.sum(), predicted)
    (g_ref,) = torch.autograd.grad(reference.sum(), predicted)
    worst = (ours - reference).abs().max().item()
    worst_grad = (g_ours - g_ref).abs().max().item()
    print(f"{name}_loss vs torchvision: max abs diff {worst:.3g}, gradients {worst_grad:.3g}")
    check(worst < 1e-6 and worst_grad < 1e-6, f"{name}_loss equals torchvision's")
    check(abs(ours_fn(predicted, target, reduction="sum").item() - reference.sum().item()) < 1e-5,
          f"{name}_loss sum reduction")
raises(ValueError, lambda: giou_loss(predicted, target, reduction="max"), "reduction")

x, y = torch.tensor([0.0, 0.5, 2.0, -3.0]), torch.zeros(4)
check(torch.allclose(smooth_l1_loss(x, y, beta=1.0), torch.tensor([0.0, 0.125, 1.5, 2.5])),
      "smooth_l1_loss by its formula")
check(torch.equal(smooth_l1_loss(x, y, beta=0.0), x.abs()), "smooth_l1_loss with beta 0 is L1")

masks = torch.rand(4, 28, 28)
mask_boxes = torch.tensor([[2.0, 3.0, 20.0, 30.0], [0.0, 0.0, 50.0, 40.0], [10, 10, 11, 11],
                           [-5.0, -5.0, 8.0, 8.0]])
pasted = paste_masks_in_image(masks, mask_boxes, (40, 50))
check(pasted.shape == (4, 40, 50) and pasted.dtype == torch.bool, "paste_masks_in_image")
check(not pasted[0, :, 25:].any() and not pasted[0, 35:].any(), "a mask stays inside its box")
check(paste_masks_in_image(masks[:0], mask_boxes[:0], (40, 50)).shape == (0, 40, 50),
      "no mask pasted")
check(ShapeSpec(channels=256, stride=4).channels == 256, "ShapeSpec")
check(cat([x]) is x and cat([x, y]).shape == (8,), "cat")
check([t.tolist() for t in nonzero_tuple(torch.tensor([0, 3, 0, 1]))] == [[1, 3]],
      "nonzero_tuple")

if failures:
    sys.exit(f"{len(failures)} checks failed")
print("OK")
