"""detkit.data.transforms and detkit.data.detection_utils: uint8 resizes equal to PIL's
(BILINEAR, NEAREST) on several scales and channel counts, float resizes equal to torch's
interpolate, flips / crops / pads against numpy slicing, polygon cuts against hand cases and their
orientation (shapely's: clockwise with y up), the rotation's coordinates against the rotation
formula and its inverse, augmentations drawing numpy's global random state in Detectron2's order
(replayed by hand with the same seed), read_image against PIL, annotation transforms and
Instances, the errors. Usage: test_transforms.py SHARED SOURCE DETKIT."""
import os
import sys

import numpy as np
import torch
from PIL import Image

from checks import check, finish, raises
import detkit
from detkit.data import detection_utils as utils
from detkit.data import transforms as T
from detkit.structures import BoxMode

shared = sys.argv[1] if len(sys.argv) > 1 else "../shared"
rng = np.random.default_rng(0)

# --- resizes -------------------------------------------------------------------------------
worst = 0
for (h, w, nh, nw) in [(100, 120, 50, 70), (37, 53, 80, 91), (64, 64, 64, 64), (480, 640, 160, 213)]:
    for channels in (None, 1, 2, 3, 4):
        shape = (h, w) if channels is None else (h, w, channels)
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        for interp, pil_interp in ((T.BILINEAR, Image.BILINEAR), (T.NEAREST, Image.NEAREST)):
            out = T.ResizeTransform(h, w, nh, nw, interp).apply_image(img)
            pil_in = Image.fromarray(img[:, :, 0] if channels == 1 else img)
            ref = np.asarray(pil_in.resize((nw, nh), pil_interp))
            ref = ref[:, :, None] if channels == 1 else ref
            check(out.shape == ref.shape, f"resize {shape} -> ({nh}, {nw}) shape {out.shape}")
            worst = max(worst, int(np.abs(out.astype(int) - ref.astype(int)).max()))
check(worst == 0, f"uint8 ResizeTransform equal to PIL's resize (largest difference {worst})")
# A strong shrink of a narrow image: Pillow 13 rounds some pixels 1 apart from detkit's resampler
# (written to Pillow 9.4's; equal on coco_tiny's sizes: docs/DATASETS.md). Measured, held to 1.
img = rng.integers(0, 256, (200, 30, 3), dtype=np.uint8)
diff = np.abs(T.ResizeTransform(200, 30, 33, 7).apply_image(img).astype(int) -
              np.asarray(Image.fromarray(img).resize((7, 33), Image.BILINEAR)))
check(diff.max() <= 1, f"(200, 30) -> (33, 7): within 1 of PIL {Image.__version__} "
      f"({(diff > 0).mean():.1%} of values differ)")
img = rng.random((30, 40, 3)).astype(np.float32)
out = T.ResizeTransform(30, 40, 45, 20).apply_image(img)
ref = torch.nn.functional.interpolate(torch.from_numpy(img).permute(2, 0, 1)[None], (45, 20),
                                      mode="bilinear", align_corners=False)[0].permute(1, 2, 0)
diff = float(np.abs(out - ref.numpy()).max())
check(diff == 0, f"float ResizeTransform equal to torch's bilinear interpolate ({diff})")
seg = rng.integers(0, 5, (30, 40), dtype=np.uint8)
out = T.ResizeTransform(30, 40, 61, 17).apply_segmentation(seg)
ref = np.asarray(Image.fromarray(seg).resize((17, 61), Image.NEAREST))
check(np.array_equal(out, ref), "apply_segmentation resizes NEAREST as PIL")
coords = np.array([[10.0, 20.0], [0.0, 0.0]])
check(np.allclose(T.ResizeTransform(30, 40, 60, 20).apply_coords(coords.copy()),
                  [[5, 40], [0, 0]]), "ResizeTransform scales x by new_w / w and y by new_h / h")

# --- flips, crops, pads, TransformList ------------------------------------------------------
img = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
check(np.array_equal(T.HFlipTransform(7).apply_image(img), img[:, ::-1]), "HFlip mirrors columns")
check(np.array_equal(T.VFlipTransform(5).apply_image(img), img[::-1]), "VFlip mirrors rows")
crop = T.CropTransform(2, 1, 3, 2, orig_w=7, orig_h=5)
check(np.array_equal(crop.apply_image(img), img[1:3, 2:5]), "CropTransform slices the window")
back = crop.inverse().apply_image(crop.apply_image(img))
check(back.shape == img.shape and np.array_equal(back[1:3, 2:5], img[1:3, 2:5]) and
      back[0].sum() == 0, "CropTransform.inverse pads back to the original size with 0")
tl = T.TransformList([T.HFlipTransform(7), T.TransformList([T.CropTransform(1, 1, 4, 3)])])
check(len(tl) == 2, "TransformList flattens nested lists")
box = tl.apply_box(np.array([[1.0, 1.0, 3.0, 2.0]]))
check(np.allclose(box, [[3, 0, 5, 1]]), f"TransformList.apply_box through flip then crop: {box}")

# polygons cut by a crop: hand cases; pieces oriented clockwise (y up), as shapely gives them
square = np.array([[0, 0], [10, 0], [10, 10], [0, 10]], dtype=float)
pieces = T.CropTransform(5, 5, 10, 10).apply_polygons([square.copy()])
check(len(pieces) == 1 and np.allclose(sorted(map(tuple, pieces[0])),
                                       [(0, 0), (0, 5), (5, 0), (5, 5)]),
      f"a square cut to a window's corner: {pieces}")
area2 = np.dot(pieces[0][:, 0], np.roll(pieces[0][:, 1], -1)) - np.dot(
    np.roll(pieces[0][:, 0], -1), pieces[0][:, 1])
check(area2 < 0, "the piece is clockwise (negative shoelace area), as shapely orients it")
u_shape = np.array([[0, 0], [3, 0], [3, 8], [6, 8], [6, 0], [9, 0], [9, 10], [0, 10]], float)
pieces = T.CropTransform(0, 0, 9, 5).apply_polygons([u_shape])
check(len(pieces) == 2, f"a U cut across its arms gives two polygons ({len(pieces)})")
check(T.CropTransform(20, 20, 5, 5).apply_polygons([square.copy()]) == [],
      "a polygon outside the window gives none")

# rotation: coordinates by the formula, the inverse maps back
rot = T.RotationTransform(40, 60, 30, expand=True)
pts = np.array([[10.0, 5.0], [59.0, 39.0]])
a = np.deg2rad(30)
center = np.array([30.0, 20.0])
d = pts - center
ref = np.stack([d[:, 0] * np.cos(a) + d[:, 1] * np.sin(a),
                -d[:, 0] * np.sin(a) + d[:, 1] * np.cos(a)], 1) + [rot.bound_w / 2,
                                                                    rot.bound_h / 2]
got = rot.apply_coords(pts.copy())
check(np.allclose(got, ref), f"RotationTransform.apply_coords is the rotation formula "
      f"({np.abs(got - ref).max():.2e})")
inv = rot.inverse().apply_coords(got.copy())
# within half a pixel: the inverse's crop offsets are whole pixels, as Detectron2's
check(np.abs(inv - pts).max() <= 0.5 + 1e-9, f"RotationTransform.inverse maps the points back "
      f"({np.abs(inv - pts).max():.3f} px)")
out = rot.apply_image(rng.integers(0, 256, (40, 60, 3), dtype=np.uint8))
check(out.shape == (rot.bound_h, rot.bound_w, 3), f"rotated image is the expanded bound "
      f"{out.shape}")
flat = np.full((40, 60), 7, np.uint8)
inner = T.RotationTransform(40, 60, 90, expand=True).apply_image(flat)
check(inner.shape == (60, 40) and (inner == 7).all(), "a 90-degree rotation keeps every pixel")

# --- augmentations: numpy's global draws, replayed ------------------------------------------
np.random.seed(3)
aug = T.ResizeShortestEdge((10, 30), max_size=100, sample_style="range")
tfm = aug.get_transform(np.zeros((40, 80, 3), np.uint8))
np.random.seed(3)
size = np.random.randint(10, 31)
check(isinstance(tfm, T.ResizeTransform) and (tfm.new_h, tfm.new_w) == (size, 2 * size),
      f"ResizeShortestEdge draws randint(lo, hi + 1): {size} -> {tfm}")
check(T.ResizeShortestEdge.get_output_shape(480, 640, 800, 1333) == (800, 1067),
      "get_output_shape(480, 640, 800, 1333) = (800, 1067)")
np.random.seed(5)
crop = T.RandomCrop("relative_range", (0.5, 0.5)).get_transform(np.zeros((100, 200)))
np.random.seed(5)
low = np.asarray((0.5, 0.5), np.float32)
ch, cw = low + np.random.rand(2) * (1 - low)
ch, cw = int(100 * ch + 0.5), int(200 * cw + 0.5)
y0, x0 = np.random.randint(100 - ch + 1), np.random.randint(200 - cw + 1)
check((crop.x0, crop.y0, crop.w, crop.h) == (x0, y0, cw, ch),
      f"RandomCrop relative_range draws as Detectron2: {crop}")
check(str(T.RandomFlip(prob=0.25)) == "RandomFlip(prob=0.25)", "an augmentation's repr")
# the blend augmentations: w drawn in [min, max], the image blended with mean / black / grey
rgb = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)
grey = rgb.dot([0.299, 0.587, 0.114])[:, :, None]
worst = 0.0
for aug, source in ((T.RandomContrast(0.5, 1.5), rgb.mean()), (T.RandomBrightness(0.8, 1.2), 0.0),
                    (T.RandomSaturation(0.1, 2.0), grey)):
    np.random.seed(11)
    out = aug.get_transform(rgb).apply_image(rgb)
    np.random.seed(11)
    w = np.random.uniform(aug.intensity_min, aug.intensity_max)
    want = np.clip((1 - w) * source + w * rgb.astype(np.float32), 0, 255).astype(np.uint8)
    worst = max(worst, float(np.abs(out.astype(int) - want).max()))
check(worst == 0, f"RandomContrast / Brightness / Saturation blend as their formulas ({worst})")
raises(AssertionError, lambda: T.RandomSaturation(0.1, 2.0).get_transform(rgb[:, :, :2]), "RGB")
inputs = T.AugInput(np.zeros((20, 30, 3), np.uint8), sem_seg=np.zeros((20, 30), np.uint8))
tfms = T.AugmentationList([T.Resize((10, 15)), T.RandomFlip(prob=1.0)])(inputs)
check(inputs.image.shape == (10, 15, 3) and inputs.sem_seg.shape == (10, 15) and len(tfms) == 2,
      "AugmentationList transforms the AugInput in place")
raises(AssertionError, lambda: T.RandomApply(T.NoOpTransform(), prob=1.5), "probability")
raises(ValueError, lambda: T.RandomFlip(horizontal=True, vertical=True), "both")
raises(AssertionError, lambda: T.RandomCrop("pixels", (1, 1)), "pixels")

# --- detection_utils -------------------------------------------------------------------------
jpeg = os.path.join(shared, "data", "coco_tiny", "val2017")
files = sorted(os.listdir(jpeg)) if os.path.isdir(jpeg) else []
if files:
    path = os.path.join(jpeg, files[0])
    rgb = utils.read_image(path, "RGB")
    ref = np.asarray(Image.open(path).convert("RGB"))
    check(rgb.shape == ref.shape and np.abs(rgb.astype(int) - ref).max() <= 2,
          f"read_image RGB against PIL ({files[0]}, largest difference "
          f"{np.abs(rgb.astype(int) - ref).max()})")
    check(np.array_equal(utils.read_image(path, "BGR"), rgb[:, :, ::-1]), "BGR is RGB reversed")
    grey = utils.read_image(path, "L")
    ref = np.asarray(Image.fromarray(rgb).convert("L"))
    check(grey.shape == rgb.shape[:2] + (1,) and np.array_equal(grey[:, :, 0], ref),
          "read_image 'L' is PIL's luma of the RGB pixels")
else:
    print(f"skip  read_image: no JPEGs in {jpeg}")
raises(detkit.Error, lambda: utils.read_image("/nonexistent/x.jpg", "RGB"), "/nonexistent/x.jpg")
raises(ValueError, lambda: utils.read_image("x.jpg", "CMYK"), "CMYK")

anno = {"bbox": [10, 10, 20, 30], "bbox_mode": BoxMode.XYWH_ABS, "category_id": 3,
        "segmentation": [[10, 10, 30, 10, 30, 40, 10, 40]],
        "keypoints": [15, 15, 2, 25, 35, 2, 0, 0, 0]}
out = utils.transform_instance_annotations(dict(anno), T.TransformList([T.HFlipTransform(100)]),
                                           (50, 100), keypoint_hflip_indices=[1, 0, 2])
check(np.allclose(out["bbox"], [70, 10, 90, 40]) and out["bbox_mode"] == BoxMode.XYXY_ABS,
      f"a flipped annotation's box: {out['bbox']}")
check(np.allclose(out["keypoints"][0], [75, 35, 2]) and np.allclose(out["keypoints"][1],
                                                                      [85, 15, 2]),
      "flipped keypoints swap by the flip indices")
inst = utils.annotations_to_instances([out], (50, 100))
check(inst.gt_classes.tolist() == [3] and len(inst.gt_masks) == 1 and
      inst.gt_keypoints.tensor.shape == (1, 3, 3), "annotations_to_instances")
mask = np.zeros((50, 100), np.uint8)
mask[5:15, 20:40] = 1
# column-major runs: 20 empty columns and 5 rows, then 20 columns of 10 ones 40 zeros apart
rle = {"size": [50, 100], "counts": [20 * 50 + 5, 10, 40, 10] + [40, 10] * 18 + [35 + 60 * 50]}
decoded = utils._decode_rle(rle)
check(decoded.sum() == 200 and decoded[5:15, 20:40].all(), "an uncompressed RLE decodes")
bit = utils.annotations_to_instances([{"bbox": [0, 0, 1, 1], "bbox_mode": BoxMode.XYXY_ABS,
                                       "category_id": 0, "segmentation": rle}], (50, 100),
                                     mask_format="bitmask")
check(int(bit.gt_masks.tensor.sum()) == 200, "bitmask from an RLE")
raises(detkit.Error, lambda: utils._decode_rle({"size": [50, 100], "counts": [5, 5]}), "sum")
raises(utils.SizeMismatchError, lambda: utils.check_image_size(
    {"width": 10, "height": 20, "file_name": "a.jpg"}, np.zeros((21, 10))), "a.jpg")
noop = T.TransformList([])
annos = [utils.transform_instance_annotations(a, noop, (50, 100)) for a in
         (dict(anno, bbox=[0, 0, 0, 5], bbox_mode=BoxMode.XYXY_ABS), dict(anno))]
kept = utils.filter_empty_instances(utils.annotations_to_instances(annos, (50, 100)))
check(len(kept) == 1, "filter_empty_instances drops the empty box")
check(utils.create_keypoint_hflip_indices("keypoints_coco_2017_val")[:3] == [0, 2, 1],
      "create_keypoint_hflip_indices of COCO: nose, then the eyes swapped")
finish()
