"""Parity oracle for detkit/ops: torchvision's ops (and Detectron2's mask pasting, re-written
here because Detectron2 is not installed) on tensors saved by tests/parity/oracle.cpp.

Usage: python3 oracle_ops.py IN.pt OUT.pt MODE
IN.pt is a dict of tensors; OUT.pt receives a plain dict of tensors (torch.save).
MODE is one of roi_align, nms, batched_nms, box_iou, paste_masks, box_iou_losses.
Several cases share one run (one interpreter start): an input key "name#k" belongs to case k, a
key without "#" to every case, and the outputs of case k are named "output_name#k".
"""
import sys

import torch
import torch.nn.functional as F
import torchvision


def roi_align(t):
    # params: [spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned]
    scale, ph, pw, ratio, aligned = t["params"].tolist()
    x = t["input"].clone().requires_grad_(True)
    out = torchvision.ops.roi_align(x, t["rois"], output_size=(int(ph), int(pw)),
                                    spatial_scale=scale, sampling_ratio=int(ratio),
                                    aligned=bool(aligned))
    out.backward(t["grad_output"])
    return {"output": out.detach(), "grad_input": x.grad}


def nms(t):
    return {"keep": torchvision.ops.nms(t["boxes"], t["scores"], float(t["iou_threshold"]))}


def batched_nms(t):
    keep = torchvision.ops.batched_nms(t["boxes"], t["scores"], t["idxs"],
                                       float(t["iou_threshold"]))
    return {"keep": keep}


def box_iou(t):
    return {"iou": torchvision.ops.box_iou(t["a"], t["b"])}


def _do_paste_mask(masks, boxes, img_h, img_w):
    """Detectron2's _do_paste_mask with skip_empty=True (its CPU path), for one mask.
    masks: (1, 1, M, M); boxes: (1, 4). Returns the pasted values and the region's slices."""
    x0_int, y0_int = torch.clamp(boxes.min(dim=0).values.floor()[:2] - 1, min=0).to(
        dtype=torch.int32)
    x1_int = torch.clamp(boxes[:, 2].max().ceil() + 1, max=img_w).to(dtype=torch.int32)
    y1_int = torch.clamp(boxes[:, 3].max().ceil() + 1, max=img_h).to(dtype=torch.int32)
    x0, y0, x1, y1 = torch.split(boxes, 1, dim=1)
    n = masks.shape[0]
    img_y = torch.arange(y0_int, y1_int, dtype=torch.float32) + 0.5
    img_x = torch.arange(x0_int, x1_int, dtype=torch.float32) + 0.5
    img_y = (img_y - y0) / (y1 - y0) * 2 - 1
    img_x = (img_x - x0) / (x1 - x0) * 2 - 1
    gx = img_x[:, None, :].expand(n, img_y.size(1), img_x.size(1))
    gy = img_y[:, :, None].expand(n, img_y.size(1), img_x.size(1))
    grid = torch.stack([gx, gy], dim=3)
    if not masks.dtype.is_floating_point:
        masks = masks.float()
    img_masks = F.grid_sample(masks, grid.to(masks.dtype), align_corners=False)
    return img_masks[:, 0], (slice(y0_int, y1_int), slice(x0_int, x1_int))


def paste_masks(t):
    """Detectron2's paste_masks_in_image on CPU (one mask per chunk). Also returns the soft
    values (0 outside each mask's region) so tests can tell threshold ties from real mismatches."""
    masks, boxes = t["masks"], t["boxes"]
    img_h, img_w = t["image_size"].tolist()
    threshold = float(t["threshold"])
    n = masks.shape[0]
    pasted = torch.zeros(n, img_h, img_w, dtype=torch.bool)
    values = torch.zeros(n, img_h, img_w, dtype=masks.dtype)
    for i in range(n):
        chunk, (ys, xs) = _do_paste_mask(masks[i:i + 1, None], boxes[i:i + 1], img_h, img_w)
        pasted[i, ys, xs] = chunk[0] >= threshold
        values[i, ys, xs] = chunk[0]
    return {"masks": pasted, "values": values}


def box_iou_losses(t):
    # torchvision's IoU losses, whose formulas are Detectron2's (fvcore's giou_loss,
    # detectron2.layers.diou_loss / ciou_loss; eps 1e-7, CIoU's alpha without gradient).
    out = {}
    for name, loss in (("giou", torchvision.ops.generalized_box_iou_loss),
                       ("diou", torchvision.ops.distance_box_iou_loss),
                       ("ciou", torchvision.ops.complete_box_iou_loss)):
        boxes = t["boxes"].clone().requires_grad_(True)
        value = loss(boxes, t["targets"], reduction="none")
        value.sum().backward()
        out[name] = value.detach()
        out[name + "_grad"] = boxes.grad
    return out


MODES = {f.__name__: f for f in (roi_align, nms, batched_nms, box_iou, paste_masks,
                                 box_iou_losses)}


def run_cases(mode, inputs):
    cases = sorted({key.split("#", 1)[1] for key in inputs if "#" in key})
    if not cases:
        return mode(inputs)
    result = {}
    for case in cases:
        args = {key: value for key, value in inputs.items() if "#" not in key}
        args.update({key.split("#", 1)[0]: value for key, value in inputs.items()
                     if key.endswith("#" + case)})
        result.update({f"{key}#{case}": value for key, value in mode(args).items()})
    return result


def main():
    in_path, out_path, mode = sys.argv[1:4]
    torch.set_num_threads(1)
    result = {k: v.contiguous() for k, v in run_cases(MODES[mode], torch.load(in_path, weights_only=False)).items()}
    if len(result) == 1:
        # A one-entry dict pickles with SETITEM, which libtorch's unpickler cannot read.
        result["_unused"] = torch.zeros(0)
    torch.save(result, out_path)


if __name__ == "__main__":
    main()
