"""detkit.layers against torchvision 0.26's ops (nms, batched_nms, roi_align with its gradient,
the GIoU / DIoU / CIoU losses) and smooth L1 against its formula; errors named."""
import sys

import torch

import detkit  # noqa: F401  (registers detkit's ops)
from checks import check, finish, raises
from detkit.layers import (Conv2d, DeformConv, FrozenBatchNorm2d, ModulatedDeformConv, ROIAlign,
                           ShapeSpec, batched_nms, cat, ciou_loss, diou_loss, get_norm,
                           giou_loss, nms, nonzero_tuple, paste_masks_in_image, roi_align,
                           smooth_l1_loss)
from detkit.utils.testing import random_boxes

try:
    import torchvision.ops as tv
except ImportError:
    print("SKIPPED: torchvision (the ops' oracle, requirements.txt) is not importable")
    sys.exit(77)



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

# Deformable convolutions against torchvision.ops.deform_conv2d, forward and gradients.
x = torch.rand(2, 4, 9, 11, dtype=torch.float64, requires_grad=True)
v1 = DeformConv(4, 6, kernel_size=3, stride=2, padding=1, groups=2, deformable_groups=2).double()
v2 = ModulatedDeformConv(4, 6, 3, padding=2, dilation=2, deformable_groups=1).double()
for name, module, offset_groups, mask_on in (("DeformConv", v1, 2, False),
                                             ("ModulatedDeformConv", v2, 1, True)):
    height, width = (5, 6) if module is v1 else (9, 11)
    offset = (torch.randn(2, 2 * offset_groups * 9, height, width, dtype=torch.float64) * 2
              ).requires_grad_()
    mask = torch.rand(2, offset_groups * 9, height, width, dtype=torch.float64) if mask_on else None
    ours = module(x, offset, mask) if mask_on else module(x, offset)
    reference = tv.deform_conv2d(x, offset, module.weight, module.bias,
                                 stride=module.stride, padding=module.padding,
                                 dilation=module.dilation, mask=mask)
    weights = torch.rand_like(ours)
    grads = torch.autograd.grad((ours * weights).sum(), [x, offset, module.weight])
    grads_ref = torch.autograd.grad((reference * weights).sum(), [x, offset, module.weight])
    worst = (ours - reference).abs().max().item()
    worst_grad = max((a - b).abs().max().item() for a, b in zip(grads, grads_ref))
    print(f"{name} vs torchvision's deform_conv2d: max abs diff {worst:.3g}, gradients "
          f"(input, offset, weight) {worst_grad:.3g}")
    check(worst < 1e-10 and worst_grad < 1e-10, f"{name} and its gradients equal torchvision's")
check(v1(x[:0], torch.zeros(0, 36, 5, 6, dtype=torch.float64)).shape == (0, 6, 5, 6),
      "DeformConv of an empty batch")
raises(RuntimeError, lambda: v1(x, torch.zeros(2, 18, 5, 6, dtype=torch.float64)),
       "the offset has 18 channels; 36 expected")
raises(RuntimeError, lambda: v2(x, torch.zeros(2, 18, 9, 11, dtype=torch.float64),
                                torch.zeros(2, 18, 9, 11, dtype=torch.float64)),
       "the mask has 18 channels; 9 expected")
raises(ValueError, lambda: DeformConv(3, 4, 3, groups=2), "divisible by groups")
check(repr(DeformConv(3, 10, kernel_size=3, padding=1, deformable_groups=2)) ==
      "DeformConv(in_channels=3, out_channels=10, kernel_size=(3, 3), stride=(1, 1), "
      "padding=(1, 1), dilation=(1, 1), groups=1, deformable_groups=2, bias=False)",
      "DeformConv's repr as Detectron2's")

# FrozenBatchNorm2d: torch's BatchNorm2d in eval mode, with and without gradients; conversion.
bn = torch.nn.BatchNorm2d(5)
bn.running_mean.uniform_(-1, 1)
bn.running_var.uniform_(0.5, 2)
bn.weight.data.uniform_(0.5, 1.5)
bn.bias.data.uniform_(-1, 1)
bn.eval()
x = torch.randn(2, 5, 4, 4)
frozen = FrozenBatchNorm2d.convert_frozen_batchnorm(torch.nn.Sequential(bn))[0]
with_grad = frozen(x.clone().requires_grad_())
worst = max((frozen(x) - bn(x)).abs().max().item(), (with_grad - bn(x)).abs().max().item())
print(f"FrozenBatchNorm2d vs BatchNorm2d in eval mode: max abs diff {worst:.3g}")
check(isinstance(frozen, FrozenBatchNorm2d) and worst < 1e-5,
      "convert_frozen_batchnorm keeps BatchNorm2d's eval output, with and without gradients")
with_grad.sum().backward()
check(not any(p.requires_grad for p in frozen.buffers()), "no gradient to the frozen buffers")
check(isinstance(get_norm("FrozenBN", 8), FrozenBatchNorm2d) and get_norm("", 8) is None and
      get_norm("GN", 64).num_groups == 32 and isinstance(get_norm("BN", 8), torch.nn.BatchNorm2d),
      "get_norm by its config names")
raises(KeyError, lambda: get_norm("XN", 8), "unknown norm 'XN'")
conv = Conv2d(5, 3, 3, padding=1, bias=False, norm=get_norm("FrozenBN", 3),
              activation=torch.nn.functional.relu)
expected = torch.relu(conv.norm(torch.nn.functional.conv2d(x, conv.weight, padding=1)))
check(torch.equal(conv(x), expected), "Conv2d applies its norm and activation after the conv")

finish()
