"""Detectron2's deterministic transforms (fvcore's Transform family and detectron2's own) on numpy
arrays: images (H, W) or (H, W, C), coordinates (N, 2) float, boxes (N, 4) XYXY, polygons (N, 2).

Where detkit's data pipeline has the operation in C++ it is that code through detkit._C: uint8
resizes (PIL's BILINEAR and NEAREST, bit for bit), polygons cut to a crop window (shapely's
intersection) and the rotation's affine warp (OpenCV's warpAffine). Flips, crops and pads are
numpy slicing, float resizes torch's interpolate, as Detectron2's. ExtentTransform,
PILColorTransform and the other PIL resampling filters go through PIL, as Detectron2's do; PIL is
imported when they run."""
import inspect
import pprint

import numpy as np
import torch
import torch.nn.functional as F

from ... import _C

__all__ = ["BlendTransform", "ColorTransform", "CropTransform", "ExtentTransform",
           "HFlipTransform", "NoOpTransform", "PILColorTransform", "PadTransform",
           "ResizeTransform", "RotationTransform", "ScaleTransform", "Transform",
           "TransformList", "VFlipTransform"]

# PIL's resampling filters (PIL.Image.Resampling: an IntEnum, so PIL's own constants compare and
# hash equal to these) and OpenCV's interpolation flags, without importing either.
NEAREST, LANCZOS, BILINEAR, BICUBIC, BOX, HAMMING = 0, 1, 2, 3, 4, 5
CV_INTER_NEAREST, CV_INTER_LINEAR = 0, 1
_TORCH_MODE = {NEAREST: "nearest", BILINEAR: "bilinear", BICUBIC: "bicubic"}


def _pil():
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError("this transform runs PIL, as Detectron2's does: pip install pillow") from e
    return Image


def _params_repr(obj, fallback):
    """ClassName(arg=value, ...) for the constructor arguments that differ from their defaults
    (Detectron2's and fvcore's __repr__); `fallback` when an argument is not an attribute."""
    parts = []
    for name, param in inspect.signature(type(obj).__init__).parameters.items():
        if name == "self":
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or not hasattr(obj, name):
            return fallback()
        value = getattr(obj, name)
        if value is param.default:
            continue
        text = pprint.pformat(value)
        parts.append(f"{name}={'...' if chr(10) in text else text}")
    return f"{type(obj).__name__}({', '.join(parts)})"


class Transform:
    """A deterministic transform: apply_image and apply_coords define it; segmentation, boxes and
    polygons follow from them unless a subclass says otherwise."""

    def _set_attributes(self, params=None):
        for key, value in (params or {}).items():
            if key != "self" and not key.startswith("_"):
                setattr(self, key, value)

    def apply_image(self, img):
        raise NotImplementedError(f"{type(self).__name__}.apply_image")

    def apply_coords(self, coords):
        raise NotImplementedError(f"{type(self).__name__}.apply_coords")

    def apply_segmentation(self, segmentation):
        return self.apply_image(segmentation)

    def apply_box(self, box):
        """(N, 4) XYXY boxes: each box's 4 corners transformed, then their bounding box."""
        box = np.asarray(box).reshape(-1, 4)
        corners = box[:, [0, 1, 2, 1, 0, 3, 2, 3]].reshape(-1, 2)
        corners = self.apply_coords(corners).reshape(-1, 4, 2)
        return np.concatenate((corners.min(axis=1), corners.max(axis=1)), axis=1)

    def apply_polygons(self, polygons):
        return [self.apply_coords(p) for p in polygons]

    @classmethod
    def register_type(cls, data_type, func=None):
        """Adds apply_<data_type> = func(transform, data) to the class (also as a decorator)."""
        if func is None:
            def decorator(f):
                cls.register_type(data_type, f)
                return f
            return decorator
        if not callable(func):
            raise AssertionError(f"register_type needs a callable, got {func!r}")
        if len(inspect.getfullargspec(func).args) != 2:
            raise AssertionError(f"register_type needs a function of (transform, data), got "
                                 f"{inspect.getfullargspec(func)}")
        setattr(cls, "apply_" + data_type, func)

    def inverse(self):
        raise NotImplementedError(f"{type(self).__name__} has no inverse")

    def __repr__(self):
        return _params_repr(self, lambda: object.__repr__(self))

    __str__ = __repr__


class TransformList(Transform):
    """Transforms applied in order (nested lists flattened); apply_<anything> maps through each."""

    def __init__(self, transforms):
        super().__init__()
        flat = []
        for t in transforms:
            if not isinstance(t, Transform):
                raise AssertionError(f"TransformList takes Transforms, got {type(t)}")
            flat.extend(t.transforms if isinstance(t, TransformList) else [t])
        self.transforms = flat

    def _apply(self, x, method):
        for t in self.transforms:
            x = getattr(t, method)(x)
        return x

    def __getattribute__(self, name):
        if name.startswith("apply_"):
            return lambda x: self._apply(x, name)
        return super().__getattribute__(name)

    def _others(self, other):
        return other.transforms if isinstance(other, TransformList) else [other]

    def __add__(self, other):
        return TransformList(self.transforms + self._others(other))

    def __iadd__(self, other):
        self.transforms.extend(self._others(other))
        return self

    def __radd__(self, other):
        return TransformList(self._others(other) + self.transforms)

    def __len__(self):
        return len(self.transforms)

    def __getitem__(self, index):
        return self.transforms[index]

    def inverse(self):
        return TransformList([t.inverse() for t in reversed(self.transforms)])

    def __repr__(self):
        return f"TransformList[{', '.join(str(t) for t in self.transforms)}]"

    __str__ = __repr__


class NoOpTransform(Transform):
    def __init__(self):
        super().__init__()

    def apply_image(self, img):
        return img

    def apply_coords(self, coords):
        return coords

    def inverse(self):
        return self

    def __getattr__(self, name):
        if name.startswith("apply_"):
            return lambda x: x
        raise AttributeError(f"NoOpTransform object has no attribute {name}")


class HFlipTransform(Transform):
    """x -> width - x; images mirrored along their width axis."""

    def __init__(self, width):
        super().__init__()
        self._set_attributes(locals())

    def apply_image(self, img):
        return np.flip(img, axis=1 if img.ndim <= 3 else -2)

    def apply_coords(self, coords):
        coords[:, 0] = self.width - coords[:, 0]
        return coords

    def inverse(self):
        return self


class VFlipTransform(Transform):
    """y -> height - y; images mirrored along their height axis."""

    def __init__(self, height):
        super().__init__()
        self._set_attributes(locals())

    def apply_image(self, img):
        return np.ascontiguousarray(np.flip(img, axis=0 if img.ndim <= 3 else -3))

    def apply_coords(self, coords):
        coords[:, 1] = self.height - coords[:, 1]
        return coords

    def inverse(self):
        return self


def _as_nchw_float(img):
    """(H, W), (H, W, C) or (N, H, W, C) -> a float (N, C, H, W) tensor."""
    tensor = torch.from_numpy(np.ascontiguousarray(img))
    if tensor.dim() == 2:
        tensor = tensor[None, None]
    elif tensor.dim() == 3:
        tensor = tensor.permute(2, 0, 1)[None]
    else:
        tensor = tensor.permute(0, 3, 1, 2)
    return tensor.float()


def _as_image(tensor, shape, dtype):
    """The inverse of _as_nchw_float for an image of `shape` (only H, W changed), in `dtype`."""
    if len(shape) == 2:
        out = tensor[0, 0]
    elif len(shape) == 3:
        out = tensor[0].permute(1, 2, 0)
    else:
        out = tensor.permute(0, 2, 3, 1)
    if dtype == np.uint8:
        out = out.round().clamp(0, 255)
    return out.numpy().astype(dtype)


class ScaleTransform(Transform):
    """fvcore's resize through torch's interpolate (interp 'nearest', 'bilinear', 'bicubic', ...)."""

    def __init__(self, h, w, new_h, new_w, interp=None):
        super().__init__()
        self._set_attributes(locals())

    def apply_image(self, img, interp=None):
        h, w = img.shape[1:3] if img.ndim == 4 else img.shape[:2]
        if (h, w) != (self.h, self.w):
            raise AssertionError(f"ScaleTransform of ({self.h}, {self.w}) got an image of "
                                 f"({h}, {w})")
        mode = interp if interp is not None else self.interp
        align = False if mode in ("linear", "bilinear", "bicubic") else None
        out = F.interpolate(_as_nchw_float(img), size=(self.new_h, self.new_w), mode=mode,
                            align_corners=align)
        shape = list(img.shape)
        start = 1 if img.ndim == 4 else 0
        shape[start:start + 2] = [self.new_h, self.new_w]
        return _as_image(out, shape, img.dtype)

    def apply_coords(self, coords):
        coords[:, 0] = coords[:, 0] * (self.new_w * 1.0 / self.w)
        coords[:, 1] = coords[:, 1] * (self.new_h * 1.0 / self.h)
        return coords

    def apply_segmentation(self, segmentation):
        return self.apply_image(segmentation, interp="nearest")

    def inverse(self):
        return ScaleTransform(self.new_h, self.new_w, self.h, self.w, self.interp)


def _clockwise(ring):
    """The ring with a negative shoelace area (clockwise with y up), the orientation shapely
    (GEOS) gives the pieces of an intersection, so the polygons are Detectron2's point for point
    up to the starting point."""
    x, y = ring[:, 0], ring[:, 1]
    area2 = np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y)
    return ring[::-1].copy() if area2 > 0 else ring


class CropTransform(Transform):
    """The window x in [x0, x0 + w), y in [y0, y0 + h); polygons are cut to it first (detkit's
    cut, shapely's intersection in Detectron2), so one polygon may give none or several."""

    def __init__(self, x0, y0, w, h, orig_w=None, orig_h=None):
        super().__init__()
        self._set_attributes(locals())

    def apply_image(self, img):
        rows, cols = slice(self.y0, self.y0 + self.h), slice(self.x0, self.x0 + self.w)
        return img[rows, cols] if img.ndim <= 3 else img[..., rows, cols, :]

    def apply_coords(self, coords):
        coords[:, 0] -= self.x0
        coords[:, 1] -= self.y0
        return coords

    def apply_polygons(self, polygons):
        pieces = []
        for polygon in polygons:
            xy = np.asarray(polygon, dtype=np.float64).reshape(-1)
            for piece in _C.crop_polygon(xy.tolist(), float(self.x0), float(self.y0),
                                         float(self.x0 + self.w), float(self.y0 + self.h)):
                pieces.append(_clockwise(np.asarray(piece, dtype=np.float64).reshape(-1, 2)))
        return [self.apply_coords(p) for p in pieces]

    def inverse(self):
        if self.orig_w is None or self.orig_h is None:
            raise AssertionError("orig_w, orig_h are required for CropTransform to be invertible!")
        return PadTransform(self.x0, self.y0, self.orig_w - self.x0 - self.w,
                            self.orig_h - self.y0 - self.h, orig_w=self.w, orig_h=self.h)


class PadTransform(Transform):
    """x0 / y0 / x1 / y1 columns and rows of pad_value (seg_pad_value for segmentations)."""

    def __init__(self, x0, y0, x1, y1, orig_w=None, orig_h=None, pad_value=0, seg_pad_value=0):
        super().__init__()
        self._set_attributes(locals())

    def _pad(self, img, value):
        padding = [(self.y0, self.y1), (self.x0, self.x1)] + [(0, 0)] * (img.ndim - 2)
        return np.pad(img, padding, mode="constant", constant_values=value)

    def apply_image(self, img):
        return self._pad(img, self.pad_value)

    def apply_segmentation(self, segmentation):
        return self._pad(segmentation, self.seg_pad_value)

    def apply_coords(self, coords):
        coords[:, 0] += self.x0
        coords[:, 1] += self.y0
        return coords

    def inverse(self):
        if self.orig_w is None or self.orig_h is None:
            raise AssertionError("orig_w, orig_h are required for PadTransform to be invertible!")
        return CropTransform(self.x0, self.y0, self.orig_w, self.orig_h,
                             orig_w=self.orig_w + self.x0 + self.x1,
                             orig_h=self.orig_h + self.y0 + self.y1)


class _PhotometricTransform(Transform):
    """A transform of pixel values only: coordinates and segmentations pass unchanged, and its
    inverse (as Detectron2's) is no transform."""

    def apply_coords(self, coords):
        return coords

    def apply_segmentation(self, segmentation):
        return segmentation

    def inverse(self):
        return NoOpTransform()


class BlendTransform(_PhotometricTransform):
    """src_weight * src_image + dst_weight * image (uint8 images clipped back to uint8)."""

    def __init__(self, src_image, src_weight, dst_weight):
        super().__init__()
        self._set_attributes(locals())

    def apply_image(self, img, interp=None):
        if img.dtype == np.uint8:
            blended = self.src_weight * self.src_image + self.dst_weight * img.astype(np.float32)
            return np.clip(blended, 0, 255).astype(np.uint8)
        return self.src_weight * self.src_image + self.dst_weight * img


class ResizeTransform(Transform):
    """(h, w) -> (new_h, new_w). uint8 images as PIL's Image.resize with `interp` (BILINEAR by
    default; BILINEAR of 1 or 3 channels and NEAREST are detkit's C++ resamplers, equal to PIL's:
    tests/python/test_transforms.py), float images with torch's interpolate; segmentations
    NEAREST."""

    def __init__(self, h, w, new_h, new_w, interp=None):
        super().__init__()
        if interp is None:
            interp = BILINEAR
        self._set_attributes(locals())

    def apply_image(self, img, interp=None):
        if tuple(img.shape[:2]) != (self.h, self.w):
            raise AssertionError(f"ResizeTransform of ({self.h}, {self.w}) got an image of shape "
                                 f"{tuple(img.shape)}")
        if img.ndim > 4:
            raise AssertionError(f"ResizeTransform takes at most 4 dimensions, got {img.ndim}")
        interp = interp if interp is not None else self.interp
        if img.dtype == np.uint8:
            return self._resize_uint8(img, interp)
        mode = _TORCH_MODE.get(interp)
        if mode is None:
            raise ValueError(f"ResizeTransform of a {img.dtype} image: interp {interp} is not one "
                             f"of NEAREST (0), BILINEAR (2), BICUBIC (3)")
        tensor = torch.from_numpy(np.ascontiguousarray(img))
        shape = list(tensor.shape)
        tensor = tensor.view(shape[:2] + [1] * (4 - len(shape)) + shape[2:]).permute(2, 3, 0, 1)
        tensor = F.interpolate(tensor, (self.new_h, self.new_w), mode=mode,
                               align_corners=None if mode == "nearest" else False)
        shape[:2] = (self.new_h, self.new_w)
        return tensor.permute(2, 3, 0, 1).reshape(shape).numpy()

    def _resize_uint8(self, img, interp):
        # PIL resizes LA and RGBA premultiplied by alpha (BILINEAR): 2 and 4 channels go
        # through PIL
        if interp == NEAREST or (interp == BILINEAR and (img.ndim == 2 or img.shape[2] in (1, 3))):
            return _C.pil_resize(np.ascontiguousarray(img), self.new_h, self.new_w,
                                 interp == NEAREST)
        Image = _pil()
        squeeze = img.ndim == 3 and img.shape[2] == 1
        pil_image = Image.fromarray(img[:, :, 0] if squeeze else img)
        out = np.asarray(pil_image.resize((self.new_w, self.new_h), interp))
        return out[:, :, None] if squeeze else out

    def apply_coords(self, coords):
        coords[:, 0] = coords[:, 0] * (self.new_w * 1.0 / self.w)
        coords[:, 1] = coords[:, 1] * (self.new_h * 1.0 / self.h)
        return coords

    def apply_segmentation(self, segmentation):
        return self.apply_image(segmentation, interp=NEAREST)

    def inverse(self):
        return ResizeTransform(self.new_h, self.new_w, self.h, self.w, self.interp)


class ExtentTransform(Transform):
    """The source rectangle src_rect (x0, y0, x1, y1) stretched onto output_size (h, w), pixels
    outside the image `fill` (PIL's Image.transform with EXTENT, as Detectron2's)."""

    def __init__(self, src_rect, output_size, interp=BILINEAR, fill=0):
        super().__init__()
        self._set_attributes(locals())

    def apply_image(self, img, interp=None):
        Image = _pil()
        h, w = self.output_size
        squeeze = img.ndim == 3 and img.shape[2] == 1
        pil_image = Image.fromarray(img[:, :, 0] if squeeze else img)
        pil_image = pil_image.transform(size=(w, h), method=Image.EXTENT, data=self.src_rect,
                                        resample=interp if interp else self.interp,
                                        fill=self.fill)
        out = np.asarray(pil_image)
        return out[:, :, None] if squeeze else out

    def apply_coords(self, coords):
        h, w = self.output_size
        x0, y0, x1, y1 = self.src_rect
        out = coords.astype(np.float32)
        out[:, 0] = (out[:, 0] - 0.5 * (x0 + x1)) * (w / (x1 - x0)) + 0.5 * w
        out[:, 1] = (out[:, 1] - 0.5 * (y0 + y1)) * (h / (y1 - y0)) + 0.5 * h
        return out

    def apply_segmentation(self, segmentation):
        return self.apply_image(segmentation, interp=NEAREST)


def _rotation_matrix(center, angle_degrees):
    """OpenCV's getRotationMatrix2D(center, angle, 1): a counter-clockwise rotation about
    `center` as a (2, 3) matrix applied to (x, y, 1)."""
    a = np.cos(np.deg2rad(angle_degrees))
    b = np.sin(np.deg2rad(angle_degrees))
    cx, cy = center
    return np.array([[a, b, (1 - a) * cx - b * cy], [-b, a, b * cx + (1 - a) * cy]])


class RotationTransform(Transform):
    """Rotates an (h, w) image `angle` degrees counter-clockwise about `center` (the image's
    centre by default); `expand` grows the output to hold the whole rotated image. Images through
    OpenCV's warpAffine (detkit._C), bilinear (interp 1) or nearest (0), as Detectron2's."""

    def __init__(self, h, w, angle, expand=True, center=None, interp=None):
        super().__init__()
        image_center = np.array((w / 2, h / 2))
        if center is None:
            center = image_center
        if interp is None:
            interp = CV_INTER_LINEAR
        cos, sin = abs(np.cos(np.deg2rad(angle))), abs(np.sin(np.deg2rad(angle)))
        if expand:
            bound_w, bound_h = np.rint([h * sin + w * cos, h * cos + w * sin]).astype(int)
        else:
            bound_w, bound_h = w, h
        self._set_attributes(locals())
        self.rm_coords = self.create_rotation_matrix()
        self.rm_image = self.create_rotation_matrix(offset=-0.5)

    def create_rotation_matrix(self, offset=0):
        center = (self.center[0] + offset, self.center[1] + offset)
        matrix = _rotation_matrix(center, self.angle)
        if self.expand:
            moved = matrix @ np.append(self.image_center + offset, 1.0)
            matrix[:, 2] += np.array([self.bound_w / 2, self.bound_h / 2]) + offset - moved
        return matrix

    def apply_image(self, img, interp=None):
        if len(img) == 0 or self.angle % 360 == 0:
            return img
        if tuple(img.shape[:2]) != (self.h, self.w):
            raise AssertionError(f"RotationTransform of ({self.h}, {self.w}) got an image of "
                                 f"shape {tuple(img.shape)}")
        interp = interp if interp is not None else self.interp
        if interp not in (CV_INTER_LINEAR, CV_INTER_NEAREST):
            raise ValueError(f"RotationTransform: interp {interp} is not cv2.INTER_LINEAR (1) or "
                             f"cv2.INTER_NEAREST (0)")
        if img.dtype not in (np.uint8, np.float32, np.float64):
            raise ValueError(f"RotationTransform rotates uint8, float32 or float64 images, got "
                             f"{img.dtype}")
        return _C.warp_affine(np.ascontiguousarray(img), self.rm_image.reshape(-1).tolist(),
                              int(self.bound_h), int(self.bound_w), interp == CV_INTER_NEAREST)

    def apply_coords(self, coords):
        coords = np.asarray(coords, dtype=float)
        if len(coords) == 0 or self.angle % 360 == 0:
            return coords
        return coords @ self.rm_coords[:, :2].T + self.rm_coords[:, 2]

    def apply_segmentation(self, segmentation):
        return self.apply_image(segmentation, interp=CV_INTER_NEAREST)

    def inverse(self):
        if not self.expand:
            raise NotImplementedError("a RotationTransform without expand lost part of the image")
        rotation = RotationTransform(self.bound_h, self.bound_w, -self.angle, True, None,
                                     self.interp)
        crop = CropTransform((rotation.bound_w - self.w) // 2, (rotation.bound_h - self.h) // 2,
                             self.w, self.h)
        return TransformList([rotation, crop])


class ColorTransform(_PhotometricTransform):
    """`op(image)` on images; coordinates and segmentations unchanged."""

    def __init__(self, op):
        if not callable(op):
            raise ValueError("op parameter should be callable")
        super().__init__()
        self._set_attributes(locals())

    def apply_image(self, img):
        return self.op(img)


class PILColorTransform(ColorTransform):
    """ColorTransform whose `op` takes and returns a PIL image."""

    def apply_image(self, img):
        return np.asarray(super().apply_image(_pil().fromarray(img)))


def _hflip_rotated_box(transform, rotated_boxes):
    rotated_boxes[:, 0] = transform.width - rotated_boxes[:, 0]
    rotated_boxes[:, 4] = -rotated_boxes[:, 4]
    return rotated_boxes


def _resize_rotated_box(transform, rotated_boxes):
    """(cx, cy, w, h, angle) boxes under a resize of different x and y scales: the centre scaled,
    each side by the length its direction takes, the angle that of the scaled direction."""
    sx, sy = transform.new_w * 1.0 / transform.w, transform.new_h * 1.0 / transform.h
    rotated_boxes[:, 0] *= sx
    rotated_boxes[:, 1] *= sy
    theta = rotated_boxes[:, 4] * np.pi / 180.0
    c, s = np.cos(theta), np.sin(theta)
    rotated_boxes[:, 2] *= np.sqrt(np.square(sx * c) + np.square(sy * s))
    rotated_boxes[:, 3] *= np.sqrt(np.square(sx * s) + np.square(sy * c))
    rotated_boxes[:, 4] = np.arctan2(sx * s, sy * c) * 180 / np.pi
    return rotated_boxes


HFlipTransform.register_type("rotated_box", _hflip_rotated_box)
ResizeTransform.register_type("rotated_box", _resize_rotated_box)
NoOpTransform.register_type("rotated_box", lambda t, x: x)
