"""Detectron2's Visualizer masks (GenericMask's inputs) as detkit's drawer takes them: one
InstanceMask per instance, from polygon lists, (H, W) binary arrays, COCO RLE dicts (decoded by
detkit._C.rle_decode), PolygonMasks, BitMasks, tensors or (N, H, W) arrays."""
import numpy as np
import torch

from .. import _C
from ..structures import BitMasks, PolygonMasks, polygons_to_bitmask


class InstanceMask:
    """One instance's mask: `polygons` (flat x0, y0, ... float arrays) or a `bitmap` (H, W)."""

    def __init__(self, height, width, polygons=None, bitmap=None):
        self.height, self.width = height, width
        self.polygons, self._bitmap = polygons, bitmap

    @property
    def mask(self):
        """The (H, W) uint8 mask, 1 inside (polygons rasterized by detkit's C++)."""
        if self._bitmap is None:
            self._bitmap = polygons_to_bitmask(self.polygons, self.height, self.width)
        return self._bitmap.astype(np.uint8)

    def area(self):
        return int(self.mask.sum())

    def drawn(self):
        """The keys of _C.draw_overlays' instance dict for this mask (image coordinates)."""
        if self.polygons is not None:
            return {"polygons": [p.tolist() for p in self.polygons]}
        return {"mask": np.ascontiguousarray(self._bitmap, dtype=np.uint8)}

    def center(self):
        """The median of the mask's pixels (x, y), Detectron2's label place; None when empty."""
        ys, xs = np.nonzero(self.mask)
        return None if len(xs) == 0 else (float(np.median(xs)), float(np.median(ys)))


def binary_array(mask, height, width, what="mask"):
    """`mask` as an (H, W) uint8 array of 0 / 1, checked against the image's size."""
    array = mask.detach().cpu().numpy() if isinstance(mask, torch.Tensor) else np.asarray(mask)
    if array.shape != (height, width):
        raise ValueError(f"Visualizer: a {what} of shape {array.shape} on an image of size "
                         f"({height}, {width}): it must be the image's (H, W)")
    return (array != 0).astype(np.uint8)


def _one(m, height, width):
    if isinstance(m, InstanceMask):
        return m
    if isinstance(m, dict):
        if "counts" not in m or "size" not in m:
            raise ValueError(f"Visualizer: an RLE mask needs 'counts' and 'size', got {list(m)}")
        h, w = (int(v) for v in m["size"])
        if (h, w) != (height, width):
            raise ValueError(f"Visualizer: an RLE mask of size ({h}, {w}) on an image of size "
                             f"({height}, {width})")
        return InstanceMask(height, width, bitmap=np.asarray(_C.rle_decode(m["counts"], h, w)))
    if isinstance(m, (list, tuple)):
        polygons = [np.asarray(p, dtype=np.float64).reshape(-1) for p in m]
        for p in polygons:
            if p.size % 2 or p.size < 6:
                raise ValueError(f"Visualizer: a polygon needs an even number (>= 6) of "
                                 f"coordinates, got {p.size}")
        return InstanceMask(height, width, polygons=polygons)
    if isinstance(m, (np.ndarray, torch.Tensor)):
        return InstanceMask(height, width, bitmap=binary_array(m, height, width))
    raise ValueError(f"Visualizer: cannot draw a mask of type {type(m).__name__}")


def convert_masks(masks, height, width):
    """Any of Detectron2's mask formats as a list of InstanceMask."""
    if isinstance(masks, PolygonMasks):
        masks = masks.polygons
    elif isinstance(masks, BitMasks):
        masks = masks.tensor
    if isinstance(masks, torch.Tensor):
        masks = masks.detach().cpu().numpy()
    if isinstance(masks, np.ndarray) and masks.ndim != 3:
        raise ValueError(f"Visualizer: a mask array must be (N, H, W), got {masks.shape}")
    return [_one(m, height, width) for m in masks]


def _spread_along_runs(free, reached):
    """`reached` grown to whole horizontal runs of `free` pixels it touches."""
    starts = free.copy()
    starts[:, 1:] &= ~free[:, :-1]
    ids = np.cumsum(starts.ravel()) * free.ravel()
    touched = np.bincount(ids[reached.ravel()], minlength=ids.max() + 1) > 0
    touched[0] = False
    return touched[ids].reshape(free.shape)


def has_holes(mask):
    """Whether the (H, W) mask encloses background not 4-connected to the image's border (what
    Detectron2's GenericMask finds with OpenCV's contour hierarchy)."""
    free = np.asarray(mask) == 0
    if not free.any():
        return False
    reached = np.zeros_like(free)
    reached[[0, -1], :] = free[[0, -1], :]
    reached[:, [0, -1]] |= free[:, [0, -1]]
    while True:
        grown = _spread_along_runs(free, reached)
        grown = _spread_along_runs(free.T, grown.T).T
        if np.array_equal(grown, reached):
            return bool((free & ~reached).any())
        reached = grown
