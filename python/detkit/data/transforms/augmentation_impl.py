"""Detectron2's built-in augmentations: each draws its parameters from numpy's global random state
in Detectron2's order (so a seeded run gives Detectron2's transforms) and returns a Transform."""
import sys

import numpy as np
import torch

from .augmentation import Augmentation, _transform_to_aug
from .transform import (BILINEAR, BlendTransform, CropTransform, ExtentTransform, HFlipTransform,
                        NoOpTransform, PadTransform, ResizeTransform, RotationTransform,
                        TransformList, VFlipTransform)

__all__ = ["FixedSizeCrop", "MinIoURandomCrop", "RandomApply", "RandomBrightness",
           "RandomContrast", "RandomCrop", "RandomCrop_CategoryAreaConstraint", "RandomExtent",
           "RandomFlip", "RandomLighting", "RandomResize", "RandomRotation", "RandomSaturation",
           "Resize", "ResizeScale", "ResizeShortestEdge"]


class RandomApply(Augmentation):
    """The wrapped augmentation (or transform) with probability `prob`, else nothing."""

    def __init__(self, tfm_or_aug, prob=0.5):
        super().__init__()
        if not 0.0 <= prob <= 1.0:
            raise AssertionError(f"RandomApply: the probability must be in [0, 1], got {prob}")
        self.aug = _transform_to_aug(tfm_or_aug)
        self.prob = prob

    def get_transform(self, *args):
        if self._rand_range() < self.prob:
            return self.aug.get_transform(*args)
        return NoOpTransform()

    def __call__(self, aug_input):
        if self._rand_range() < self.prob:
            return self.aug(aug_input)
        return NoOpTransform()


class RandomFlip(Augmentation):
    """A horizontal (or vertical) flip with probability `prob`."""

    def __init__(self, prob=0.5, *, horizontal=True, vertical=False):
        super().__init__()
        if horizontal and vertical:
            raise ValueError("RandomFlip cannot flip both ways: use two RandomFlips")
        if not horizontal and not vertical:
            raise ValueError("RandomFlip: one of horizontal or vertical must be True")
        self._init(locals())

    def get_transform(self, image):
        h, w = image.shape[:2]
        if self._rand_range() < self.prob:
            return HFlipTransform(w) if self.horizontal else VFlipTransform(h)
        return NoOpTransform()


class Resize(Augmentation):
    """To a fixed (h, w) (an int for a square)."""

    def __init__(self, shape, interp=BILINEAR):
        if isinstance(shape, int):
            shape = (shape, shape)
        shape = tuple(shape)
        self._init(locals())

    def get_transform(self, image):
        return ResizeTransform(image.shape[0], image.shape[1], self.shape[0], self.shape[1],
                               self.interp)


class ResizeShortestEdge(Augmentation):
    """The short side to a drawn length (an integer in [lo, hi] for 'range', one of the lengths
    for 'choice'), unless the long side would exceed max_size; a drawn 0 leaves the image."""

    @torch.jit.unused
    def __init__(self, short_edge_length, max_size=sys.maxsize, sample_style="range",
                 interp=BILINEAR):
        super().__init__()
        if sample_style not in ("range", "choice"):
            raise AssertionError(f"ResizeShortestEdge: sample_style is 'range' or 'choice', got "
                                 f"{sample_style!r}")
        self.is_range = sample_style == "range"
        if isinstance(short_edge_length, int):
            short_edge_length = (short_edge_length, short_edge_length)
        if self.is_range and len(short_edge_length) != 2:
            raise AssertionError(f"ResizeShortestEdge: 'range' takes two lengths, got "
                                 f"{short_edge_length}")
        self._init(locals())

    @torch.jit.unused
    def get_transform(self, image):
        h, w = image.shape[:2]
        if self.is_range:
            size = np.random.randint(self.short_edge_length[0], self.short_edge_length[1] + 1)
        else:
            size = np.random.choice(self.short_edge_length)
        if size == 0:
            return NoOpTransform()
        new_h, new_w = ResizeShortestEdge.get_output_shape(h, w, size, self.max_size)
        return ResizeTransform(h, w, new_h, new_w, self.interp)

    @staticmethod
    def get_output_shape(oldh: int, oldw: int, short_edge_length: int, max_size: int):
        """(new_h, new_w), each rounded as int(x + 0.5) (detkit's C++ ResizeShortestEdge
        computes the same; this one is TorchScript-able)."""
        size = short_edge_length * 1.0
        scale = size / min(oldh, oldw)
        if oldh < oldw:
            new_h, new_w = size, scale * oldw
        else:
            new_h, new_w = scale * oldh, size
        if max(new_h, new_w) > max_size:
            scale = max_size * 1.0 / max(new_h, new_w)
            new_h = new_h * scale
            new_w = new_w * scale
        return int(new_h + 0.5), int(new_w + 0.5)


class ResizeScale(Augmentation):
    """Fits the image inside (target_height, target_width) times a scale drawn in
    [min_scale, max_scale], keeping its aspect ratio (the resize of 'resize_and_crop')."""

    def __init__(self, min_scale, max_scale, target_height, target_width, interp=BILINEAR):
        super().__init__()
        self._init(locals())

    def _get_resize(self, image, scale):
        size = image.shape[:2]
        target = np.multiply((self.target_height, self.target_width), scale)
        factor = np.minimum(target[0] / size[0], target[1] / size[1])
        out = np.round(np.multiply(size, factor)).astype(int)
        return ResizeTransform(size[0], size[1], int(out[0]), int(out[1]), self.interp)

    def get_transform(self, image):
        return self._get_resize(image, np.random.uniform(self.min_scale, self.max_scale))


class RandomRotation(Augmentation):
    """Rotates by an angle drawn in [lo, hi] ('range') or among `angle` ('choice'), about a drawn
    relative centre when `center` is given."""

    def __init__(self, angle, expand=True, center=None, sample_style="range", interp=None):
        super().__init__()
        if sample_style not in ("range", "choice"):
            raise AssertionError(f"RandomRotation: sample_style is 'range' or 'choice', got "
                                 f"{sample_style!r}")
        self.is_range = sample_style == "range"
        if isinstance(angle, (float, int)):
            angle = (angle, angle)
        if center is not None and isinstance(center[0], (float, int)):
            center = (center, center)
        self._init(locals())

    def get_transform(self, image):
        h, w = image.shape[:2]
        center = None
        if self.is_range:
            angle = np.random.uniform(self.angle[0], self.angle[1])
            if self.center is not None:
                center = (np.random.uniform(self.center[0][0], self.center[1][0]),
                          np.random.uniform(self.center[0][1], self.center[1][1]))
        else:
            angle = np.random.choice(self.angle)
            if self.center is not None:
                center = self.center[np.random.choice(len(self.center))]
        if center is not None:
            center = (w * center[0], h * center[1])
        if angle % 360 == 0:
            return NoOpTransform()
        return RotationTransform(h, w, angle, expand=self.expand, center=center,
                                 interp=self.interp)


class FixedSizeCrop(Augmentation):
    """A crop_size (h, w) window at a drawn offset; a smaller image padded to it when `pad`."""

    def __init__(self, crop_size, pad=True, pad_value=128.0, seg_pad_value=255):
        super().__init__()
        self._init(locals())

    def _get_crop(self, image):
        size = image.shape[:2]
        room = np.maximum(np.subtract(size, self.crop_size), 0)
        offset = np.round(np.multiply(room, np.random.uniform(0.0, 1.0))).astype(int)
        return CropTransform(offset[1], offset[0], self.crop_size[1], self.crop_size[0], size[1],
                             size[0])

    def _get_pad(self, image):
        size = image.shape[:2]
        pad = np.maximum(np.subtract(self.crop_size, size), 0)
        kept = np.minimum(size, self.crop_size)
        return PadTransform(0, 0, pad[1], pad[0], kept[1], kept[0], self.pad_value,
                            self.seg_pad_value)

    def get_transform(self, image):
        transforms = [self._get_crop(image)]
        if self.pad:
            transforms.append(self._get_pad(image))
        return TransformList(transforms)


class RandomCrop(Augmentation):
    """A window of crop_size by crop_type ('relative', 'relative_range', 'absolute',
    'absolute_range'; see detkit/data/transforms/augmentation.h) at a drawn position."""

    def __init__(self, crop_type, crop_size):
        super().__init__()
        if crop_type not in ("relative_range", "relative", "absolute", "absolute_range"):
            raise AssertionError(f"RandomCrop: unknown crop_type {crop_type!r}")
        self._init(locals())

    def get_transform(self, image):
        h, w = image.shape[:2]
        crop_h, crop_w = self.get_crop_size((h, w))
        if h < crop_h or w < crop_w:
            raise AssertionError(f"{self}: a ({crop_h}, {crop_w}) window in a ({h}, {w}) image")
        y0 = np.random.randint(h - crop_h + 1)
        x0 = np.random.randint(w - crop_w + 1)
        return CropTransform(x0, y0, crop_w, crop_h)

    def get_crop_size(self, image_size):
        h, w = image_size
        if self.crop_type == "relative":
            ch, cw = self.crop_size
            return int(h * ch + 0.5), int(w * cw + 0.5)
        if self.crop_type == "relative_range":
            low = np.asarray(self.crop_size, dtype=np.float32)
            ch, cw = low + np.random.rand(2) * (1 - low)
            return int(h * ch + 0.5), int(w * cw + 0.5)
        if self.crop_type == "absolute":
            return min(self.crop_size[0], h), min(self.crop_size[1], w)
        if self.crop_size[0] > self.crop_size[1]:
            raise AssertionError(f"RandomCrop 'absolute_range': {self.crop_size} is not (min, max)")
        ch = np.random.randint(min(h, self.crop_size[0]), min(h, self.crop_size[1]) + 1)
        cw = np.random.randint(min(w, self.crop_size[0]), min(w, self.crop_size[1]) + 1)
        return ch, cw


class RandomCrop_CategoryAreaConstraint(Augmentation):
    """RandomCrop retried (at most 10 draws) until no one category of sem_seg (but
    ignored_category) covers more than single_category_max_area of the window."""

    def __init__(self, crop_type, crop_size, single_category_max_area=1.0,
                 ignored_category=None):
        self.crop_aug = RandomCrop(crop_type, crop_size)
        self._init(locals())

    def get_transform(self, image, sem_seg):
        if self.single_category_max_area >= 1.0:
            return self.crop_aug.get_transform(image)
        h, w = sem_seg.shape
        for _ in range(10):
            crop = self.crop_aug.get_crop_size((h, w))
            y0 = np.random.randint(h - crop[0] + 1)
            x0 = np.random.randint(w - crop[1] + 1)
            labels, counts = np.unique(sem_seg[y0:y0 + crop[0], x0:x0 + crop[1]],
                                       return_counts=True)
            if self.ignored_category is not None:
                counts = counts[labels != self.ignored_category]
            if len(counts) > 1 and np.max(counts) < np.sum(counts) * self.single_category_max_area:
                break
        return CropTransform(x0, y0, crop[1], crop[0])


class RandomExtent(Augmentation):
    """A drawn sub-rectangle (scaled by a factor in scale_range, shifted by up to shift_range of
    the image), which may reach outside the image (filled with 0)."""

    def __init__(self, scale_range, shift_range):
        super().__init__()
        self._init(locals())

    def get_transform(self, image):
        h, w = image.shape[:2]
        rect = np.array([-0.5 * w, -0.5 * h, 0.5 * w, 0.5 * h])
        rect *= np.random.uniform(self.scale_range[0], self.scale_range[1])
        rect[0::2] += self.shift_range[0] * w * (np.random.rand() - 0.5)
        rect[1::2] += self.shift_range[1] * h * (np.random.rand() - 0.5)
        rect[0::2] += 0.5 * w
        rect[1::2] += 0.5 * h
        return ExtentTransform(src_rect=(rect[0], rect[1], rect[2], rect[3]),
                               output_size=(int(rect[3] - rect[1]), int(rect[2] - rect[0])))


class _RandomBlend(Augmentation):
    """Blends the image with a source (_source) by a weight w drawn in [intensity_min,
    intensity_max]: w = 1 keeps the image."""

    def __init__(self, intensity_min, intensity_max):
        super().__init__()
        self._init(locals())

    def get_transform(self, image):
        source = self._source(image)
        w = np.random.uniform(self.intensity_min, self.intensity_max)
        return BlendTransform(src_image=source, src_weight=1 - w, dst_weight=w)


class RandomContrast(_RandomBlend):
    """Blends with the image's mean."""

    def _source(self, image):
        return image.mean()


class RandomBrightness(_RandomBlend):
    """Blends with black."""

    def _source(self, image):
        return 0


class RandomSaturation(_RandomBlend):
    """Blends an RGB image with its grey (0.299 R + 0.587 G + 0.114 B)."""

    def _source(self, image):
        if image.shape[-1] != 3:
            raise AssertionError("RandomSaturation only works on RGB images")
        return image.dot([0.299, 0.587, 0.114])[:, :, np.newaxis]


class RandomLighting(Augmentation):
    """AlexNet's PCA lighting noise over ImageNet's RGB eigenvectors; weights ~ N(0, scale)."""

    def __init__(self, scale):
        super().__init__()
        self._init(locals())
        self.eigen_vecs = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                                    [-0.5836, -0.6948, 0.4203]])
        self.eigen_vals = np.array([0.2175, 0.0188, 0.0045])

    def get_transform(self, image):
        if image.shape[-1] != 3:
            raise AssertionError("RandomLighting only works on RGB images")
        weights = np.random.normal(scale=self.scale, size=3)
        return BlendTransform(src_image=self.eigen_vecs.dot(weights * self.eigen_vals),
                              src_weight=1.0, dst_weight=1.0)


class RandomResize(Augmentation):
    """To one (h, w) of shape_list, drawn."""

    def __init__(self, shape_list, interp=BILINEAR):
        self.shape_list = shape_list
        self._init(locals())

    def get_transform(self, image):
        h, w = self.shape_list[np.random.randint(low=0, high=len(self.shape_list))]
        return ResizeTransform(image.shape[0], image.shape[1], h, w, self.interp)


class MinIoURandomCrop(Augmentation):
    """SSD's crop: a drawn minimum IoU with the boxes (or no crop), windows tried until one
    overlaps every box at least that much and holds some box centre."""

    def __init__(self, min_ious=(0.1, 0.3, 0.5, 0.7, 0.9), min_crop_size=0.3, mode_trials=1000,
                 crop_trials=50):
        self.min_ious = min_ious
        self.sample_mode = (1, *min_ious, 0)
        self.min_crop_size = min_crop_size
        self.mode_trials = mode_trials
        self.crop_trials = crop_trials

    def get_transform(self, image, boxes):
        from ...structures import Boxes, pairwise_iou
        if boxes is None:
            return NoOpTransform()
        h, w, _ = image.shape
        for _ in range(self.mode_trials):
            mode = np.random.choice(self.sample_mode)
            self.mode = mode
            if mode == 1:
                return NoOpTransform()
            for _ in range(self.crop_trials):
                new_w = np.random.uniform(self.min_crop_size * w, w)
                new_h = np.random.uniform(self.min_crop_size * h, h)
                if new_h / new_w < 0.5 or new_h / new_w > 2:
                    continue
                left = np.random.uniform(w - new_w)
                top = np.random.uniform(h - new_h)
                patch = np.array((int(left), int(top), int(left + new_w), int(top + new_h)))
                if patch[2] == patch[0] or patch[3] == patch[1]:
                    continue
                ious = pairwise_iou(Boxes(patch.reshape(-1, 4)),
                                    Boxes(boxes.reshape(-1, 4))).reshape(-1)
                if len(ious) > 0 and ious.min() < mode:
                    continue
                if len(ious) > 0:
                    centers = (boxes[:, :2] + boxes[:, 2:]) / 2
                    inside = ((centers[:, 0] > patch[0]) & (centers[:, 1] > patch[1]) &
                              (centers[:, 0] < patch[2]) & (centers[:, 1] < patch[3]))
                    if not inside.any():
                        continue
                return CropTransform(int(left), int(top), int(new_w), int(new_h))
        return NoOpTransform()
