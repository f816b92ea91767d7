"""detkit.structures as Detectron2's: Boxes, BoxMode.convert, the pairwise measures, ImageList,
Instances.cat — numbers against plain formulas written here, and the errors."""
import math

import numpy as np
import torch

import detkit  # noqa: F401  (registers detkit's ops)
from checks import check, finish, raises
from detkit.structures import (BitMasks, Boxes, BoxMode, ImageList, Instances, PolygonMasks,
                               ROIMasks, matched_pairwise_iou, pairwise_ioa, pairwise_iou,
                               pairwise_point_box_distance, polygons_to_bitmask)
from detkit.structures import Keypoints, heatmaps_to_keypoints
from detkit.structures.masks import rasterize_polygons_within_box



def iou_by_formula(a, b):
    out = torch.zeros(len(a), len(b), dtype=torch.float64)
    for i, p in enumerate(a.tolist()):
        for j, q in enumerate(b.tolist()):
            w = min(p[2], q[2]) - max(p[0], q[0])
            h = min(p[3], q[3]) - max(p[1], q[1])
            inter = max(w, 0) * max(h, 0)
            union = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter
            out[i, j] = inter / union if inter > 0 else 0.0
    return out


torch.manual_seed(0)
a = torch.rand(30, 4) * 50
a[:, 2:] += a[:, :2]
b = torch.cat([a[:10] + torch.rand(10, 4), torch.tensor([[5.0, 5, 5, 9], [0, 0, 0, 0]])])
iou = pairwise_iou(Boxes(a), Boxes(b))
worst = (iou.double() - iou_by_formula(a, b)).abs().max().item()
print(f"pairwise_iou (detkit's box_iou kernel) vs the formula: max abs diff {worst:.3g}")
check(worst < 1e-6, "pairwise_iou equals the formula, degenerate boxes give 0")
grad_iou = pairwise_iou(Boxes(a.requires_grad_()), Boxes(b))  # the differentiable path
check(torch.allclose(grad_iou, iou, atol=1e-6) and grad_iou.requires_grad,
      "pairwise_iou with gradients gives the same values")
a = a.detach()
ioa = pairwise_ioa(Boxes(a), Boxes(b[:10]))
inter = iou_by_formula(a, b[:10]) * 0  # the intersection by the formula
for i, p in enumerate(a.tolist()):
    for j, q in enumerate(b[:10].tolist()):
        inter[i, j] = max(min(p[2], q[2]) - max(p[0], q[0]), 0) * max(
            min(p[3], q[3]) - max(p[1], q[1]), 0)
expected_ioa = inter / Boxes(b[:10]).area().double()
worst = (ioa.double() - expected_ioa).abs().max().item()
print(f"pairwise_ioa vs the formula: max abs diff {worst:.3g}")
check(worst < 1e-6, "pairwise_ioa is the intersection over the second box's area")
matched = matched_pairwise_iou(Boxes(a[:10]), Boxes(b[:10]))
check(torch.allclose(matched.double(), iou_by_formula(a[:10], b[:10]).diagonal(), atol=1e-6),
      "matched_pairwise_iou is the diagonal of pairwise_iou")
raises(ValueError, lambda: matched_pairwise_iou(Boxes(a[:3]), Boxes(b[:2])), "3 and 2")
distance = pairwise_point_box_distance(torch.tensor([[3.0, 4.0]]),
                                       Boxes(torch.tensor([[1.0, 1.0, 10.0, 5.0]])))
check(distance.tolist() == [[[2.0, 3.0, 7.0, 1.0]]], "point-box distances: left top right bottom")

# Boxes
boxes = Boxes([[-5.0, 2.0, 30.0, 40.0], [1.0, 1.0, 1.0, 8.0]])
check(boxes.area().tolist() == [35.0 * 38.0, 0.0], "Boxes.area")
check(boxes.nonempty().tolist() == [True, False], "Boxes.nonempty")
check(boxes.inside_box((50, 50)).tolist() == [False, True], "Boxes.inside_box")
clipped = boxes.clone()
clipped.clip((20, 25))
check(clipped.tensor.tolist() == [[0.0, 2.0, 25.0, 20.0], [1.0, 1.0, 1.0, 8.0]], "Boxes.clip")
check(boxes.tensor[0, 0].item() == -5.0, "clip of a clone leaves the original")
scaled = boxes.clone()
scaled.scale(2.0, 0.5)
check(scaled.tensor[0].tolist() == [-10.0, 1.0, 60.0, 20.0], "Boxes.scale")
check(boxes.get_centers()[0].tolist() == [12.5, 21.0], "Boxes.get_centers")
check(len(boxes[1]) == 1 and len(boxes[torch.tensor([True, False])]) == 1 and
      len(boxes[0:2]) == 2 and len(boxes[torch.tensor([1, 0, 1])]) == 3, "Boxes indexing")
check(len(Boxes.cat([boxes, boxes[0]])) == 3 and len(Boxes.cat([])) == 0, "Boxes.cat")
check(Boxes(torch.empty(0)).tensor.shape == (0, 4), "empty Boxes are (0, 4)")
raises(ValueError, lambda: Boxes(torch.zeros(3, 5)), "(N, 4)")
raises(TypeError, lambda: Boxes.cat([boxes, torch.zeros(1, 4)]), "Boxes")
raises(ValueError, lambda: Boxes([[0.0, 0.0, math.inf, 1.0]]).clip((5, 5)), "infinite")

# BoxMode.convert
xywh = [10.0, 20.0, 30.0, 40.0]
check(BoxMode.convert(xywh, BoxMode.XYWH_ABS, BoxMode.XYXY_ABS) == [10.0, 20.0, 40.0, 60.0],
      "XYWH -> XYXY on a list")
check(BoxMode.convert(tuple(xywh), 1, 0) == (10.0, 20.0, 40.0, 60.0), "int modes, a tuple")
array = np.array([xywh], dtype=np.float32)
back = BoxMode.convert(BoxMode.convert(array, 1, 0), 0, 1)
check(isinstance(back, np.ndarray) and np.array_equal(back, array) and array[0, 2] == 30.0,
      "an array round trip, the input untouched")
rotated = BoxMode.convert(torch.tensor([[50.0, 50.0, 20.0, 10.0, 90.0]]), BoxMode.XYWHA_ABS,
                          BoxMode.XYXY_ABS)
check(torch.allclose(rotated, torch.tensor([[45.0, 40.0, 55.0, 60.0]]), atol=1e-5),
      "XYWHA at 90 degrees -> the upright rectangle")
check(BoxMode.convert(xywh, 1, 4) == [25.0, 40.0, 30.0, 40.0, 0.0], "XYWH -> XYWHA")
raises(NotImplementedError, lambda: BoxMode.convert(xywh, 2, 0), "relative")
raises(ValueError, lambda: BoxMode.convert([1.0, 2.0, 3.0], 1, 0), "3 elements")

# ImageList
images = [torch.ones(3, 10, 7), torch.full((3, 5, 12), 2.0)]
batch = ImageList.from_tensors(images, size_divisibility=4, pad_value=-1.0)
check(batch.tensor.shape == (2, 3, 12, 12) and batch.image_sizes == [(10, 7), (5, 12)],
      "from_tensors pads to the largest sides rounded up to 4")
check(torch.equal(batch[1], images[1]) and batch.tensor[0, 0, 11, 11].item() == -1.0,
      "image i without its padding; padding is pad_value")
square = ImageList.from_tensors(images, padding_constraints={"square_size": 16})
check(square.tensor.shape == (2, 3, 16, 16), "padding_constraints square_size")
single = ImageList.from_tensors([torch.ones(2, 3)], 4)
check(single.tensor.shape == (1, 4, 4), "one HW image padded")
raises(ValueError, lambda: ImageList.from_tensors([torch.ones(3, 4, 4), torch.ones(1, 4, 4)]),
       "differ before their last two sides")
raises(ValueError, lambda: ImageList.from_tensors([]), "at least one")


def padded(images):
    batch = ImageList.from_tensors(images, 8)
    return batch.tensor, batch.image_sizes


traced = torch.jit.trace(padded, ([torch.ones(3, 9, 9), torch.ones(3, 4, 12)],))
traced_tensor, traced_sizes = traced([torch.ones(3, 17, 5), torch.ones(3, 3, 3)])
check(traced_tensor.shape == (2, 3, 24, 8) and traced_sizes[0].tolist() == [17, 5],
      "a traced from_tensors pads other sizes (nothing hard-coded in the trace)")

# Instances.cat
one = Instances((20, 30), boxes=Boxes(a[:2]), scores=torch.tensor([0.5, 0.7]), names=["x", "y"])
two = Instances((20, 30), boxes=Boxes(a[2:3]), scores=torch.tensor([0.1]), names=["z"])
joined = Instances.cat([one, two])
check(len(joined) == 3 and joined.names == ["x", "y", "z"] and
      torch.equal(joined.boxes.tensor, a[:3]), "Instances.cat joins tensors, Boxes and lists")
raises(ValueError, lambda: Instances.cat([one, Instances((5, 5), scores=torch.ones(1),
                                                         boxes=Boxes(a[:1]), names=["q"])]),
       "image sizes")

# Masks (detkit's rasteriser, equal to pycocotools' in tests/structures): a rectangle's pixels,
# the boxes of masks both ways, the areas by the shoelace formula, cropping both ways.
rectangle = np.array([1.0, 0.0, 4.0, 0.0, 4.0, 4.0, 1.0, 4.0])
bitmask = polygons_to_bitmask([rectangle], 5, 6)
expected = np.zeros((5, 6), dtype=bool)
expected[0:4, 1:4] = True
check(bitmask.dtype == bool and np.array_equal(bitmask, expected),
      "polygons_to_bitmask: a rectangle covers its pixels as pycocotools rasterises it")
check(polygons_to_bitmask([], 3, 4).shape == (3, 4), "no polygon: an empty mask")
triangle = [0.0, 0.0, 8.0, 0.0, 0.0, 6.0]
polygons = PolygonMasks([[rectangle], [triangle, rectangle + 10]])
check(torch.allclose(polygons.area(), torch.tensor([12.0, 24.0 + 12.0])), "PolygonMasks.area")
check(polygons.get_bounding_boxes().tensor.tolist() == [[1, 0, 4, 4], [0, 0, 14, 14]],
      "PolygonMasks.get_bounding_boxes spans every point")
bits = BitMasks.from_polygon_masks(polygons, 20, 20)
check(bits.tensor.shape == (2, 20, 20) and bits.area().tolist() == [12, int(bits.tensor[1].sum())],
      "BitMasks.from_polygon_masks")
check(bits.get_bounding_boxes().tensor[0].tolist() == [1.0, 0.0, 4.0, 4.0],
      "BitMasks.get_bounding_boxes: [x_min, y_min, x_max + 1, y_max + 1]")
check(BitMasks(torch.zeros(1, 4, 4)).get_bounding_boxes().tensor.tolist() == [[0, 0, 0, 0]],
      "an empty bitmask's box is zeros")
check(BitMasks.from_polygon_masks([], 7, 9).tensor.shape == (0, 7, 9), "no polygon masks")
crop_boxes = torch.tensor([[0.0, 0.0, 6.0, 6.0], [0.0, 0.0, 16.0, 16.0]])
from_polygons = polygons.crop_and_resize(crop_boxes, 12)
from_bits = bits.crop_and_resize(crop_boxes, 12)
agree = (from_polygons == from_bits).float().mean().item()
print(f"crop_and_resize from polygons vs from bitmasks: {100 * agree:.1f} % of cells agree")
check(from_polygons.shape == (2, 12, 12) and agree > 0.9, "crop_and_resize both ways agree")
check(torch.equal(rasterize_polygons_within_box([rectangle], np.array([0.0, 0.0, 6.0, 6.0]), 12),
                  from_polygons[0]), "rasterize_polygons_within_box is one instance's crop")
check(len(polygons[0]) == 1 and len(polygons[[1, 0, 1]]) == 3 and
      len(polygons[torch.tensor([False, True])]) == 1 and len(polygons[0:2]) == 2,
      "PolygonMasks indexing")
check(len(PolygonMasks.cat([polygons, polygons[1]])) == 3 and
      len(BitMasks.cat([bits, bits[0]])) == 3, "PolygonMasks.cat and BitMasks.cat")
raises(ValueError, lambda: PolygonMasks([[[1.0, 2.0, 3.0]]]), "instance 0")
raises(ValueError, lambda: BitMasks(torch.zeros(4, 4)), "(N, H, W)")
raises(IndexError, lambda: polygons[torch.tensor([True])], "bool index")
raises(ValueError, lambda: polygons.crop_and_resize(crop_boxes[:1], 12), "1 boxes for 2")
raises(detkit.Error, lambda: detkit._C.polygon_masks_crop_and_resize(
    [[rectangle.tolist()]], torch.zeros(1, 3), 4), "PolygonMasks.crop_and_resize")
probabilities = torch.rand(2, 14, 14)
pasted = ROIMasks(probabilities).to_bitmasks(crop_boxes, 20, 20)
check(torch.equal(pasted.tensor, torch.ops.detkit.paste_masks_in_image(
    probabilities, crop_boxes, 20, 20, 0.5)), "ROIMasks.to_bitmasks pastes at the boxes")

# Keypoints: decoding against Detectron2's heatmaps_to_keypoints written out here (bicubic
# resize of each map to its box's ceil'd size, argmax, the cell centre scaled back, the score
# exp(logit - max) at the argmax over the sum over the map's own cells), encoding on cells whose index is known.
def decode_by_formula(maps, rois):
    x0, y0 = rois[:, 0], rois[:, 1]
    widths = (rois[:, 2] - rois[:, 0]).clamp(min=1)
    heights = (rois[:, 3] - rois[:, 1]).clamp(min=1)
    out = torch.zeros(maps.shape[0], maps.shape[1], 4)
    for i in range(maps.shape[0]):
        w, h = int(math.ceil(widths[i].item())), int(math.ceil(heights[i].item()))
        resized = torch.nn.functional.interpolate(maps[[i]], size=(h, w), mode="bicubic",
                                                  align_corners=False)[0]
        peak = resized.amax(dim=(1, 2), keepdim=True)
        # normalised over the map's own (pool-resolution) cells, as Detectron2's
        probability = (resized - peak).exp() / (maps[i] - peak).exp().sum(dim=(1, 2), keepdim=True)
        position = resized.view(maps.shape[1], -1).argmax(dim=1)
        xs, ys = position % w, position // w
        keypoint = torch.arange(maps.shape[1])
        out[i, :, 0] = (xs.float() + 0.5) * (widths[i] / w) + x0[i]
        out[i, :, 1] = (ys.float() + 0.5) * (heights[i] / h) + y0[i]
        out[i, :, 2] = resized[keypoint, ys, xs]
        out[i, :, 3] = probability[keypoint, ys, xs]
    return out


maps = torch.randn(3, 5, 14, 14)
rois = torch.tensor([[10.0, 20.0, 40.5, 61.0], [0.0, 0.0, 14.0, 14.0], [5.0, 5.0, 5.5, 30.0]])
decoded = heatmaps_to_keypoints(maps, rois)
worst = (decoded - decode_by_formula(maps, rois)).abs().max().item()
print(f"heatmaps_to_keypoints vs Detectron2's formula: max abs diff {worst:.3g}")
check(decoded.shape == (3, 5, 4) and worst < 1e-4, "heatmaps_to_keypoints decodes as Detectron2's")
points = Keypoints(torch.tensor([[[12.0, 22.0, 2.0], [39.0, 60.0, 2.0], [30.0, 30.0, 0.0],
                                  [50.0, 30.0, 2.0]]]))
cells, valid = points.to_heatmap(torch.tensor([[10.0, 20.0, 40.0, 60.0]]), 10)
# cell of (x, y): floor((x - x0) * 10 / 30), floor((y - y0) * 10 / 40)
check(cells[0, 0].item() == 0 * 10 + 0 and cells[0, 1].item() == 9 * 10 + 9,
      "Keypoints.to_heatmap: a keypoint's cell index in its box's grid")
check(valid.tolist() == [[True, True, False, False]],
      "to_heatmap: an invisible keypoint and one outside the box are not valid")
check(len(Keypoints.cat([points, points])) == 2 and len(points[0]) == 1, "Keypoints cat / index")
raises(ValueError, lambda: Keypoints(torch.zeros(2, 3)), "(N, K, 3)")

finish()
