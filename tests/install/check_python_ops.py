#!/usr/bin/env python3
"""check_python_ops.py BUILD WORK: installs the detkit build in BUILD into WORK/prefix, loads the
installed libdetkit_ops.so into Debian's python3-torch with torch.ops.load_library, and checks
torch.ops.detkit.{roi_align and multilevel_roi_align (and their gradients), nms, batched_nms, box_iou, paste_masks_in_image,
deform_conv2d (and its gradients)}
against torchvision (and Detectron2's mask pasting, as tests/parity/oracle_ops.py writes it) on
random inputs. Prints the largest difference of each."""
import os
import shutil
import subprocess
import sys

import torch
import torchvision

build, work = sys.argv[1:3]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parity"))
import oracle_ops  # noqa: E402  (Detectron2's paste_masks_in_image, re-written)

shutil.rmtree(work, ignore_errors=True)
prefix = os.path.join(work, "prefix")
subprocess.run(["cmake", "--install", build, "--prefix", prefix], check=True,
               stdout=subprocess.DEVNULL)
torch.ops.load_library(os.path.join(prefix, "lib", "libdetkit_ops.so"))
ops = torch.ops.detkit
torch.manual_seed(0)


def random_boxes(n, size):
    xy = torch.rand(n, 2) * size * 0.6
    return torch.cat([xy, xy + torch.rand(n, 2) * size * 0.4 + 1], 1)


report = []
x = torch.randn(2, 8, 32, 32, requires_grad=True)
rois = torch.cat([torch.randint(0, 2, (20, 1)).float(), random_boxes(20, 128)], 1)
for aligned, ratio in [(True, 0), (False, 2)]:
    ours = ops.roi_align(x, rois, 0.25, 7, 7, ratio, aligned)
    theirs = torchvision.ops.roi_align(x, rois, (7, 7), 0.25, ratio, aligned)
    g = torch.randn_like(ours)
    (g_ours,) = torch.autograd.grad(ours, x, g)
    (g_theirs,) = torch.autograd.grad(theirs, x, g)
    report.append((f"roi_align aligned={aligned}", (ours - theirs).abs().max().item(), 1e-5))
    report.append((f"roi_align gradient aligned={aligned}",
                   (g_ours - g_theirs).abs().max().item(), 1e-5))

# multilevel_roi_align against torchvision's roi_align on each roi's level, rows in roi order.
pyramid = [torch.randn(2, 8, 32, 32, requires_grad=True),
           torch.randn(2, 8, 16, 16, requires_grad=True)]
levels = torch.randint(0, 2, (20,))
ours = ops.multilevel_roi_align(pyramid, rois, levels, [0.25, 0.125], 7, 7, 0, True)
theirs = torch.cat([torchvision.ops.roi_align(pyramid[level], rois[levels == level], (7, 7),
                                              0.25 / 2 ** level, 0, True) for level in (0, 1)])
theirs = theirs[torch.argsort(torch.cat([(levels == level).nonzero()[:, 0] for level in (0, 1)]))]
g = torch.randn_like(ours)
for level, (g_ours, g_theirs) in enumerate(zip(torch.autograd.grad(ours, pyramid, g),
                                               torch.autograd.grad(theirs, pyramid, g))):
    report.append((f"multilevel_roi_align gradient level {level}",
                   (g_ours - g_theirs).abs().max().item(), 1e-5))
report.append(("multilevel_roi_align", (ours - theirs).abs().max().item(), 1e-5))

boxes, scores = random_boxes(200, 100), torch.rand(200)
idxs = torch.randint(0, 4, (200,))
same = torch.equal(ops.nms(boxes, scores, 0.5), torchvision.ops.nms(boxes, scores, 0.5))
report.append(("nms (kept indices differ)", 0.0 if same else 1.0, 0))
same = torch.equal(ops.batched_nms(boxes, scores, idxs, 0.5),
                   torchvision.ops.batched_nms(boxes, scores, idxs, 0.5))
report.append(("batched_nms (kept indices differ)", 0.0 if same else 1.0, 0))
report.append(("box_iou", (ops.box_iou(boxes[:50], boxes[50:]) -
                           torchvision.ops.box_iou(boxes[:50], boxes[50:])).abs().max().item(), 1e-6))

masks, mask_boxes = torch.rand(6, 28, 28), random_boxes(6, 60)
pasted = ops.paste_masks_in_image(masks, mask_boxes, 64, 80, 0.5)
want = oracle_ops.paste_masks({"masks": masks, "boxes": mask_boxes,
                               "image_size": torch.tensor([64, 80]),
                               "threshold": torch.tensor(0.5)})["masks"]
report.append(("paste_masks_in_image (pixels differing)",
               float((pasted != want).sum()), 0))

# deform_conv2d (v2, 2 offset groups, stride 2) and its gradients against torchvision's, in double.
torch.manual_seed(7)
inputs = [torch.randn(2, 4, 9, 11, dtype=torch.double), torch.randn(6, 4, 3, 3, dtype=torch.double),
          torch.randn(2, 36, 5, 6, dtype=torch.double) * 2, torch.rand(2, 18, 5, 6, dtype=torch.double),
          torch.randn(6, dtype=torch.double)]
ours_in = [t.clone().requires_grad_() for t in inputs]
theirs_in = [t.clone().requires_grad_() for t in inputs]
x, w, offset, mask, bias = ours_in
ours = ops.deform_conv2d(x, w, offset, mask, bias, 2, 2, 1, 1, 1, 1, 1, 2)
x, w, offset, mask, bias = theirs_in
theirs = torchvision.ops.deform_conv2d(x, offset, w, bias, stride=2, padding=1, mask=mask)
report.append(("deform_conv2d", (ours - theirs).abs().max().item(), 1e-10))
grad = torch.randn_like(ours)
(ours * grad).sum().backward()
(theirs * grad).sum().backward()
for name, a, b in zip(["input", "weight", "offset", "mask", "bias"], ours_in, theirs_in):
    report.append((f"deform_conv2d gradient of {name}", (a.grad - b.grad).abs().max().item(), 1e-10))

for name, diff, tolerance in report:
    print(f"torch.ops.detkit from Python: {name}: max abs diff {diff:.3g}")
failed = [name for name, diff, tolerance in report if diff > tolerance]
sys.exit(f"differs from torchvision: {failed}" if failed else 0)
