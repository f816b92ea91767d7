"""Instance masks as Detectron2's (detectron2.structures.masks): BitMasks, PolygonMasks,
ROIMasks and polygons_to_bitmask. Rasterising, areas and boxes are detkit's C++ (the rasteriser
its data pipeline and COCO evaluation use, equal to pycocotools')."""
import copy
import itertools

import numpy as np
import torch

from .. import _C
from .boxes import Boxes


def _polygon_lists(polygons_per_instance):
    """[[np.ndarray or list of floats]] -> [[[float]]] for detkit._C."""
    return [[np.asarray(p, dtype=np.float64).reshape(-1).tolist() for p in instance]
            for instance in polygons_per_instance]


def polygons_to_bitmask(polygons, height: int, width: int) -> np.ndarray:
    """One instance's polygons (flat x0, y0, x1, y1, ... arrays) as an (H, W) bool array."""
    if len(polygons) == 0:
        return np.zeros((height, width)).astype(bool)
    mask = _C.polygons_to_bitmask(_polygon_lists([polygons])[0], int(height), int(width))
    return mask.numpy().astype(bool)


def rasterize_polygons_within_box(polygons, box: np.ndarray, mask_size: int) -> torch.Tensor:
    """The polygons cut to box (XYXY) on a mask_size x mask_size grid: (M, M) bool."""
    boxes = torch.as_tensor(np.asarray(box, dtype=np.float32)).reshape(1, 4)
    return _C.polygon_masks_crop_and_resize(_polygon_lists([polygons]), boxes, int(mask_size))[0]


class BitMasks:
    """(N, H, W) bool masks."""

    def __init__(self, tensor):
        if isinstance(tensor, torch.Tensor):
            tensor = tensor.to(torch.bool)
        else:
            tensor = torch.as_tensor(tensor, dtype=torch.bool, device=torch.device("cpu"))
        if tensor.dim() != 3:
            raise ValueError(f"BitMasks needs an (N, H, W) tensor, got shape {tuple(tensor.shape)}")
        self.image_size = tensor.shape[1:]
        self.tensor = tensor

    def to(self, *args, **kwargs) -> "BitMasks":
        return BitMasks(self.tensor.to(*args, **kwargs))

    @property
    def device(self) -> torch.device:
        return self.tensor.device

    def __getitem__(self, item) -> "BitMasks":
        if isinstance(item, int):
            return BitMasks(self.tensor[item].unsqueeze(0))
        selected = self.tensor[item]
        if selected.dim() != 3:
            raise IndexError(f"indexing BitMasks with {item} did not give (N, H, W) masks")
        return BitMasks(selected)

    def __iter__(self):
        yield from self.tensor

    def __repr__(self) -> str:
        return self.__class__.__name__ + f"(num_instances={len(self.tensor)})"

    def __len__(self) -> int:
        return self.tensor.shape[0]

    def nonempty(self) -> torch.Tensor:
        return self.tensor.flatten(1).any(dim=1)

    def area(self) -> torch.Tensor:
        return self.tensor.sum(dim=(1, 2))

    def get_bounding_boxes(self) -> Boxes:
        """[x_min, y_min, x_max + 1, y_max + 1] of the set pixels; zeros for an empty mask."""
        return Boxes(_C.bitmasks_bounding_boxes(self.tensor.cpu()).to(self.device))

    def crop_and_resize(self, boxes: torch.Tensor, mask_size: int) -> torch.Tensor:
        """Mask i cut to boxes[i] (XYXY) and resized to mask_size x mask_size with ROIAlign
        (aligned), thresholded at 0.5: (N, M, M) bool."""
        if len(boxes) != len(self):
            raise ValueError(f"BitMasks.crop_and_resize: {len(boxes)} boxes for {len(self)} "
                             "masks")
        device = self.tensor.device
        index = torch.arange(len(boxes), device=device).to(dtype=boxes.dtype)[:, None]
        rois = torch.cat([index, boxes.to(device)], dim=1)
        masks = self.tensor.to(dtype=torch.float32).unsqueeze(1)
        output = torch.ops.detkit.roi_align(masks, rois.to(torch.float32), 1.0, int(mask_size),
                                            int(mask_size), 0, True).squeeze(1)
        return output >= 0.5

    @staticmethod
    def from_polygon_masks(polygon_masks, height: int, width: int) -> "BitMasks":
        if isinstance(polygon_masks, PolygonMasks):
            polygon_masks = polygon_masks.polygons
        if len(polygon_masks) == 0:
            return BitMasks(torch.zeros((0, int(height), int(width)), dtype=torch.bool))
        return BitMasks(_C.bitmasks_from_polygons(_polygon_lists(polygon_masks), int(height),
                                                  int(width)))

    @staticmethod
    def from_roi_masks(roi_masks, height: int, width: int) -> "BitMasks":
        return roi_masks.to_bitmasks(height, width)

    @staticmethod
    def cat(bitmasks_list) -> "BitMasks":
        if not isinstance(bitmasks_list, (list, tuple)) or not bitmasks_list:
            raise ValueError("BitMasks.cat takes a non-empty list of BitMasks")
        if not all(isinstance(b, BitMasks) for b in bitmasks_list):
            raise TypeError("BitMasks.cat: every item must be a BitMasks")
        return type(bitmasks_list[0])(torch.cat([b.tensor for b in bitmasks_list], dim=0))


class PolygonMasks:
    """Per instance, a list of polygons: flat float64 arrays [x0, y0, x1, y1, ...] in pixels."""

    def __init__(self, polygons):
        if not isinstance(polygons, list):
            raise ValueError("PolygonMasks takes a list of instances, each a list of polygons; got "
                             f"{type(polygons).__name__}")

        def to_array(polygon, i):
            if isinstance(polygon, torch.Tensor):
                polygon = polygon.cpu().numpy()
            array = np.asarray(polygon).astype("float64")
            if array.ndim != 1 or len(array) % 2 != 0 or len(array) < 6:
                raise ValueError(f"PolygonMasks: instance {i} has a polygon of {array.size} "
                                 "coordinates; a polygon needs an even number, at least 6")
            return array

        self.polygons = []
        for i, instance in enumerate(polygons):
            if not isinstance(instance, (list, tuple)):
                raise ValueError(f"PolygonMasks: instance {i} must be a list of polygons, got "
                                 f"{type(instance).__name__}")
            self.polygons.append([to_array(p, i) for p in instance])

    def to(self, *args, **kwargs) -> "PolygonMasks":
        return self

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def get_bounding_boxes(self) -> Boxes:
        return Boxes(_C.polygon_masks_bounding_boxes(_polygon_lists(self.polygons)))

    def nonempty(self) -> torch.Tensor:
        return torch.from_numpy(np.asarray([len(p) > 0 for p in self.polygons], dtype=bool))

    def __getitem__(self, item) -> "PolygonMasks":
        """An int, a slice, a list of ints, or a bool / int tensor or array."""
        if isinstance(item, int):
            selected = [self.polygons[item]]
        elif isinstance(item, slice):
            selected = self.polygons[item]
        elif isinstance(item, list):
            selected = [self.polygons[i] for i in item]
        elif isinstance(item, (torch.Tensor, np.ndarray)):
            item = torch.as_tensor(item)
            if item.dtype == torch.bool:
                if item.dim() != 1 or len(item) != len(self):
                    raise IndexError(f"a bool index for {len(self)} PolygonMasks must be of "
                                     f"length {len(self)}, got shape {tuple(item.shape)}")
                item = item.nonzero().squeeze(1)
            selected = [self.polygons[i] for i in item.reshape(-1).cpu().tolist()]
        else:
            raise TypeError(f"PolygonMasks cannot be indexed with {type(item).__name__}")
        return PolygonMasks(copy.deepcopy(selected))

    def __iter__(self):
        return iter(self.polygons)

    def __repr__(self) -> str:
        return self.__class__.__name__ + f"(num_instances={len(self.polygons)})"

    def __len__(self) -> int:
        return len(self.polygons)

    def crop_and_resize(self, boxes: torch.Tensor, mask_size: int) -> torch.Tensor:
        """Instance i's polygons cut to boxes[i] (XYXY) and rasterised on a mask_size grid, as
        Detectron2's mask targets: (N, M, M) bool."""
        if len(boxes) != len(self):
            raise ValueError(f"PolygonMasks.crop_and_resize: {len(boxes)} boxes for {len(self)} "
                             "masks")
        device = boxes.device
        masks = _C.polygon_masks_crop_and_resize(_polygon_lists(self.polygons),
                                                 boxes.detach().cpu().to(torch.float32),
                                                 int(mask_size))
        return masks.to(device=device)

    def area(self) -> torch.Tensor:
        """The summed shoelace areas of each instance's polygons (not a pixel count)."""
        return _C.polygon_masks_area(_polygon_lists(self.polygons))

    @staticmethod
    def cat(polymasks_list) -> "PolygonMasks":
        if not isinstance(polymasks_list, (list, tuple)) or not polymasks_list:
            raise ValueError("PolygonMasks.cat takes a non-empty list of PolygonMasks")
        if not all(isinstance(p, PolygonMasks) for p in polymasks_list):
            raise TypeError("PolygonMasks.cat: every item must be a PolygonMasks")
        return type(polymasks_list[0])(
            list(itertools.chain.from_iterable(p.polygons for p in polymasks_list)))


class ROIMasks:
    """(N, M, M) mask probabilities relative to their boxes, as the mask head predicts them."""

    def __init__(self, tensor: torch.Tensor):
        if tensor.dim() != 3:
            raise ValueError(f"ROIMasks needs an (N, M, M) tensor, got {tuple(tensor.shape)}")
        self.tensor = tensor

    def to(self, device) -> "ROIMasks":
        return ROIMasks(self.tensor.to(device))

    @property
    def device(self) -> torch.device:
        return self.tensor.device

    def __len__(self):
        return self.tensor.shape[0]

    def __getitem__(self, item) -> "ROIMasks":
        selected = self.tensor[item]
        if selected.dim() != 3:
            raise IndexError(f"indexing ROIMasks with {item} did not give (N, M, M) masks")
        return ROIMasks(selected)

    def __repr__(self) -> str:
        return self.__class__.__name__ + f"(num_instances={len(self.tensor)})"

    def to_bitmasks(self, boxes, height: int, width: int, threshold: float = 0.5) -> BitMasks:
        """Pasted into the image at their boxes (detkit's paste kernel, Detectron2's rule)."""
        from ..layers.mask_ops import paste_masks_in_image
        return BitMasks(paste_masks_in_image(self.tensor, boxes, (height, width),
                                             threshold=threshold))
