"""detkit.utils.visualizer from Python: output shapes at scales 0.5 / 1 / 2 (round(H * scale));
a binary mask's blend (the formula image * (1 - alpha) + colour * alpha) inside it and the image
untouched far outside; IMAGE_BW grey (R == G == B == the channel mean) outside the masks; a
rotated box's outline pixels along its edges (corners by the rotation matrix) with its inside
untouched; an empty mask leaving the image unchanged; a label changing pixels near its box's
corner only; draw_soft_mask against its blend formula; a saved PNG read back by PIL equal to
get_image(); mask holes; colour names; the errors.
Usage: test_visualizer.py [SHARED SOURCE DETKIT] (unused)."""
import math
import os
import tempfile

import numpy as np
import torch
from PIL import Image

from checks import check, finish, raises
import detkit
from detkit.structures import Instances, RotatedBoxes
from detkit.utils.color_names import to_rgb
from detkit.utils.vis_masks import has_holes
from detkit.utils.visualizer import ColorMode, Visualizer

rng = np.random.default_rng(0)
H, W = 60, 80

# Shapes: Detectron2's output is the image's size times the scale.
image = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
for scale in (0.5, 1.0, 2.0):
    v = Visualizer(image, None, scale=scale)
    out = v.overlay_instances(boxes=np.array([[5.0, 5, 30, 40]]), labels=["a"]).get_image()
    want = (round(H * scale), round(W * scale), 3)
    check(out.shape == want and out.dtype == np.uint8, f"scale {scale}: {out.shape} == {want}")
check(np.array_equal(Visualizer(image).output.get_image(), image), "nothing drawn: the image")

# A binary mask: the blend inside (away from the outline), the image far outside.
flat = np.full((H, W, 3), 100, np.uint8)
mask = np.zeros((H, W), np.uint8)
mask[20:40, 30:60] = 1
out = Visualizer(flat).draw_binary_mask(mask, color="blue", alpha=0.5).get_image()
want = 100 * 0.5 + np.array([0.0, 0.0, 255.0]) * 0.5
inside = out[23:37, 33:57].reshape(-1, 3).astype(float)
far = np.ones((H, W), bool)
far[15:45, 25:65] = False
worst = np.abs(inside - want).max()
check(worst <= 1, f"mask blend inside: largest difference {worst} from {want.tolist()}")
check(np.array_equal(out[far], flat[far]), "mask: pixels 5 px or more outside are the image's")
blue = (out[..., 2].astype(int) - out[..., 0]) > 50
check(not blue[far].any() and blue[20:40, 30:60].mean() > 0.9, "the mask's colour only inside")

# IMAGE_BW: grey (the channel mean, truncated) outside the masks, away from boxes and labels.
inst = Instances((H, W))
inst.pred_boxes = torch.tensor([[30.0, 20, 60, 40]])
inst.scores = torch.tensor([0.9])
inst.pred_classes = torch.tensor([1])
inst.pred_masks = torch.from_numpy(mask.astype(bool))[None]
out = Visualizer(image, None, instance_mode=ColorMode.IMAGE_BW).draw_instance_predictions(inst)
out = out.get_image()
grey = image.astype(np.float32).mean(axis=2).astype(np.uint8)
away = np.ones((H, W), bool)
away[:45] = False  # the label above the box spans the width of this small image
away[20:45, :25] = away[20:45, 65:] = True  # beside the box and mask
check(np.all(out[away][:, 0] == out[away][:, 1]) and np.all(out[away][:, 1] == out[away][:, 2]),
      "IMAGE_BW: R == G == B outside the masks")
check(np.array_equal(out[away][:, 0], grey[away]), "IMAGE_BW: the grey is the channel mean")
none = Visualizer(image, None, instance_mode=ColorMode.IMAGE_BW).draw_instance_predictions(
    inst[:0]).get_image()
check(np.array_equal(none, np.repeat(grey[..., None], 3, axis=2)), "IMAGE_BW, no instance: grey")

# A rotated box (cx, cy, w, h, angle CCW in degrees): its outline along the edges in red.
black = np.zeros((H, W, 3), np.uint8)
cx, cy, bw, bh, angle = 40.0, 30.0, 40.0, 20.0, 30.0
out = Visualizer(black).overlay_instances(boxes=RotatedBoxes(torch.tensor([[cx, cy, bw, bh,
                                                                            angle]])),
                                          assigned_colors=["red"]).get_image()
t = math.radians(angle)
corners = [(cx + x * math.cos(t) + y * math.sin(t), cy - x * math.sin(t) + y * math.cos(t))
           for x, y in ((-bw / 2, -bh / 2), (bw / 2, -bh / 2), (bw / 2, bh / 2), (-bw / 2, bh / 2))]
misses = 0
for k in range(4):
    (x0, y0), (x1, y1) = corners[k], corners[(k + 1) % 4]
    for f in np.linspace(0.1, 0.9, 9):
        x, y = round(x0 + f * (x1 - x0)), round(y0 + f * (y1 - y0))
        misses += int(out[y - 1:y + 2, x - 1:x + 2, 0].max() < 100)
check(misses == 0, f"rotated box: red within 1 px of 36 points along its edges ({misses} missed)")
check(not out[int(cy) - 4:int(cy) + 5, int(cx) - 4:int(cx) + 5].any(), "rotated box: inside empty")

# An empty mask draws nothing, with or without text.
out = Visualizer(image).draw_binary_mask(np.zeros((H, W)), color="red", text="x").get_image()
check(np.array_equal(out, image), "an empty binary mask leaves the image unchanged")

# A label: pixels change near the box's top-left corner, nowhere far from it.
plain = Visualizer(black).overlay_instances(boxes=np.array([[40.0, 30, 70, 55]]),
                                            assigned_colors=["g"]).get_image()
labelled = Visualizer(black).overlay_instances(boxes=np.array([[40.0, 30, 70, 55]]),
                                               labels=["dog"], assigned_colors=["g"]).get_image()
changed = (plain != labelled).any(axis=2)
ys, xs = np.nonzero(changed)
check(changed.sum() > 20 and ys.min() >= 5 and xs.min() >= 35 and ys.max() <= 45,
      f"label: {changed.sum()} pixels changed, rows {ys.min()}..{ys.max()}, "
      f"columns {xs.min()}..{xs.max()} (the corner is at x 40, y 30)")

# draw_soft_mask: image * (1 - w * alpha) + colour * w * alpha.
soft = rng.random((H, W)).astype(np.float32)
out = Visualizer(image).draw_soft_mask(soft, color=(0.2, 0.4, 0.6), alpha=0.5).get_image()
w = soft[..., None] * 0.5
want = image * (1 - w) + np.array([0.2, 0.4, 0.6]) * 255 * w
worst = np.abs(out - want).max()
check(worst <= 0.5 + 1e-3, f"draw_soft_mask against its formula: largest difference {worst:.3f}")

# save: a PNG (OpenCV's writer) whose pixels, read back by PIL, are get_image()'s.
v = Visualizer(image, scale=2.0)
v.draw_binary_mask(mask, color="red", text="m")
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "out.png")
    v.output.save(path)
    saved = np.asarray(Image.open(path).convert("RGB"))
check(np.array_equal(saved, v.output.get_image()),
      f"save: a {saved.shape[1]}x{saved.shape[0]} PNG equal to get_image()")

# Holes: a ring has one, a filled rectangle none; a ring is drawn without outline.
ring = np.zeros((H, W), np.uint8)
ring[10:40, 10:40] = 1
ring[20:30, 20:30] = 0
check(has_holes(ring) and not has_holes(mask) and not has_holes(np.ones((H, W))), "mask holes")
out = Visualizer(flat).draw_binary_mask(ring, color="blue").get_image()
colours = {tuple(p) for p in out[10:40, 10:40][ring[10:40, 10:40] == 1]}
check(len(colours) == 1, f"a mask with a hole: one blended colour inside it ({colours})")

check(to_rgb("red") == (1.0, 0.0, 0.0) and to_rgb("#00ff00") == (0.0, 1.0, 0.0)
      and to_rgb("g") == (0.0, 0.5, 0.0), "colour names and hex strings")

# Errors.
raises(ValueError, lambda: Visualizer(image).draw_binary_mask(mask, color="reddish"), "reddish")
raises(ValueError, lambda: Visualizer(image).draw_binary_mask(np.ones((H, W + 1)), color="red"),
       "shape (60, 81)")
raises(ValueError, lambda: Visualizer(image).overlay_instances(masks=[np.ones((5, 5))]),
       "shape (5, 5)")
raises(ValueError, lambda: Visualizer(image).draw_box([0, 0, 5, 5], edge_color=(2, 0, 0)), "0..1")
raises(ValueError, lambda: Visualizer(image).overlay_instances(boxes=np.zeros((2, 4)),
                                                                labels=["a"]), "1 labels")
raises(detkit.Error, lambda: Visualizer(image).output.save("/nonexistent/dir/out.png"),
       "/nonexistent/dir/out.png")
raises(ValueError, lambda: Visualizer(image[..., :2]), "(H, W, 3)")
raises(NotImplementedError, lambda: Visualizer(image).draw_dataset_dict(
    {"annotations": [], "sem_seg_file_name": "x.png"}), "sem_seg_file_name")
finish()
