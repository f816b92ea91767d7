"""Detectron2's detection_utils: reading images, transforming one image's annotations and turning
them into Instances. Images are read by detkit's reader (detkit._C.read_image: EXIF orientation
applied; a missing, truncated or oversized file a detkit.Error naming it), RLE masks decoded and
polygons rasterised by detkit's mask code (pycocotools' results); the rest is Detectron2's glue
over detkit.data.transforms and detkit.structures."""
import logging

import numpy as np
import torch

from .. import _C
from ..structures import (BitMasks, Boxes, BoxMode, Instances, Keypoints, PolygonMasks,
                          polygons_to_bitmask)
from . import transforms as T
from .catalog import MetadataCatalog

__all__ = ["SizeMismatchError", "annotations_to_instances", "build_augmentation",
           "build_transform_gen", "check_image_size", "check_metadata_consistency",
           "convert_image_to_rgb", "create_keypoint_hflip_indices", "filter_empty_instances",
           "gen_crop_transform_with_instance", "get_fed_loss_cls_weights", "read_image",
           "transform_instance_annotations", "transform_keypoint_annotations",
           "transform_proposals"]

# RGB <-> YUV (BT.601), as Detectron2's YUV-BT.601 format.
_M_RGB2YUV = [[0.299, 0.587, 0.114], [-0.14713, -0.28886, 0.436], [0.615, -0.51499, -0.10001]]
_M_YUV2RGB = [[1.0, 0.0, 1.13983], [1.0, -0.39465, -0.58060], [1.0, 2.03211, 0.0]]


class SizeMismatchError(ValueError):
    """An image whose size differs from its record's width / height."""


def _luma(rgb):
    """PIL's convert('L') of a uint8 RGB image: ITU-R 601-2 luma in 16-bit fixed point."""
    rgb = rgb.astype(np.uint32)
    return ((rgb[..., 0] * 19595 + rgb[..., 1] * 38470 + rgb[..., 2] * 7471 + 0x8000) >> 16
            ).astype(np.uint8)


def read_image(file_name, format=None):
    """The image file as a uint8 (H, W, 3) array in `format` ('BGR', 'RGB'), an (H, W, 1) array
    for 'L', or float (H, W, 3) YUV for 'YUV-BT.601'. None reads RGB: where Detectron2 gives the
    file's own PIL mode ((H, W) grey, 4-channel RGBA), detkit's reader gives three channels (a
    grey file's value in each, an alpha channel dropped)."""
    from ..utils.file_io import PathManager
    path = PathManager.get_local_path(file_name)
    if format in ("BGR", "RGB"):
        return _C.read_image(path, format)
    if format not in (None, "L", "YUV-BT.601"):
        raise ValueError(f"read_image: format {format!r} is not one of 'BGR', 'RGB', 'L', "
                         f"'YUV-BT.601' or None ({file_name})")
    rgb = _C.read_image(path, "RGB")
    if format == "L":
        return _luma(rgb)[:, :, None]
    if format == "YUV-BT.601":
        return np.dot(rgb / 255.0, np.array(_M_RGB2YUV).T)
    return rgb


def convert_image_to_rgb(image, format):
    """An image of `format` ('BGR', 'RGB', 'L', 'YUV-BT.601') as uint8 RGB (H, W, 3)."""
    if isinstance(image, torch.Tensor):
        image = image.cpu().numpy()
    if format == "BGR":
        return image[:, :, [2, 1, 0]]
    if format == "YUV-BT.601":
        return np.dot(image, np.array(_M_YUV2RGB).T) * 255.0
    if format == "L":
        grey = image[:, :, 0].astype(np.uint8)
        return np.repeat(grey[:, :, None], 3, axis=2)
    if format == "RGB":
        return image.astype(np.uint8)
    raise ValueError(f"convert_image_to_rgb: format {format!r} is not one of 'BGR', 'RGB', 'L', "
                     f"'YUV-BT.601'")


def check_image_size(dataset_dict, image):
    """Raises SizeMismatchError when the image is not the record's width x height; fills them in
    when the record has none."""
    if "width" in dataset_dict or "height" in dataset_dict:
        got = (image.shape[1], image.shape[0])
        expected = (dataset_dict["width"], dataset_dict["height"])
        if got != expected:
            where = f" for image {dataset_dict['file_name']}" if "file_name" in dataset_dict else ""
            raise SizeMismatchError(f"Mismatched image shape{where}, got {got}, expect "
                                    f"{expected}. Please check the width/height in your "
                                    f"annotation.")
    dataset_dict.setdefault("width", image.shape[1])
    dataset_dict.setdefault("height", image.shape[0])


def transform_proposals(dataset_dict, image_shape, transforms, *, proposal_topk, min_box_size=0):
    """The record's precomputed proposals transformed, clipped, filtered by size and cut to the
    top `proposal_topk`, as dataset_dict['proposals'] (Instances)."""
    if "proposal_boxes" not in dataset_dict:
        return
    boxes = BoxMode.convert(dataset_dict.pop("proposal_boxes"),
                            dataset_dict.pop("proposal_bbox_mode"), BoxMode.XYXY_ABS)
    boxes = Boxes(transforms.apply_box(boxes))
    logits = torch.as_tensor(dataset_dict.pop("proposal_objectness_logits").astype("float32"))
    boxes.clip(image_shape)
    keep = boxes.nonempty(threshold=min_box_size)
    proposals = Instances(image_shape)
    proposals.proposal_boxes = boxes[keep][:proposal_topk]
    proposals.objectness_logits = logits[keep][:proposal_topk]
    dataset_dict["proposals"] = proposals


def _decode_rle(segm):
    size = segm.get("size")
    if not isinstance(size, (list, tuple)) or len(size) != 2 or "counts" not in segm:
        raise ValueError(f"an RLE segmentation has 'counts' and 'size' [h, w], got keys "
                         f"{sorted(segm)}")
    return _C.rle_decode(segm["counts"], int(size[0]), int(size[1]))


def transform_instance_annotations(annotation, transforms, image_size, *,
                                   keypoint_hflip_indices=None):
    """One annotation dict transformed in place (and returned): its bbox as XYXY_ABS clipped to
    the image, its polygons (cut by a crop) or RLE (decoded to a mask), its keypoints."""
    if isinstance(transforms, (tuple, list)):
        transforms = T.TransformList(transforms)
    bbox = BoxMode.convert(annotation["bbox"], annotation["bbox_mode"], BoxMode.XYXY_ABS)
    bbox = transforms.apply_box(np.array([bbox]))[0].clip(min=0)
    annotation["bbox"] = np.minimum(bbox, list(image_size + image_size)[::-1])
    annotation["bbox_mode"] = BoxMode.XYXY_ABS
    if "segmentation" in annotation:
        segm = annotation["segmentation"]
        if isinstance(segm, list):
            polygons = [np.asarray(p).reshape(-1, 2) for p in segm]
            annotation["segmentation"] = [p.reshape(-1)
                                          for p in transforms.apply_polygons(polygons)]
        elif isinstance(segm, dict):
            mask = transforms.apply_segmentation(_decode_rle(segm))
            if tuple(mask.shape[:2]) != tuple(image_size):
                raise AssertionError(f"the transformed mask is {mask.shape[:2]}, the image "
                                     f"{tuple(image_size)}")
            annotation["segmentation"] = mask
        else:
            raise ValueError(f"Cannot transform segmentation of type '{type(segm)}': polygons "
                             f"(list[list[float] or ndarray]) or a COCO RLE dict")
    if "keypoints" in annotation:
        annotation["keypoints"] = transform_keypoint_annotations(
            annotation["keypoints"], transforms, image_size, keypoint_hflip_indices)
    return annotation


def transform_keypoint_annotations(keypoints, transforms, image_size, keypoint_hflip_indices=None):
    """(K, 3) keypoints transformed; those outside the image get visibility 0; an odd number of
    horizontal flips swaps left and right by keypoint_hflip_indices; invisible ones are zeroed."""
    keypoints = np.asarray(keypoints, dtype="float64").reshape(-1, 3)
    xy = transforms.apply_coords(keypoints[:, :2])
    inside = ((xy >= np.array([0, 0])) & (xy <= np.array(image_size[::-1]))).all(axis=1)
    keypoints[:, :2] = xy
    keypoints[:, 2][~inside] = 0
    flips = sum(isinstance(t, T.HFlipTransform) for t in transforms.transforms)
    if flips % 2 == 1:
        if keypoint_hflip_indices is None:
            raise ValueError("Cannot flip keypoints without providing flip indices!")
        if len(keypoints) != len(keypoint_hflip_indices):
            raise ValueError(f"Keypoint data has {len(keypoints)} points, but metadata contains "
                             f"{len(keypoint_hflip_indices)} points!")
        keypoints = keypoints[np.asarray(keypoint_hflip_indices, dtype=np.int32), :]
    keypoints[keypoints[:, 2] == 0] = 0
    return keypoints


def _bitmask(segm, image_size):
    if isinstance(segm, list):
        return polygons_to_bitmask(segm, *image_size)
    if isinstance(segm, dict):
        return _decode_rle(segm)
    if isinstance(segm, np.ndarray):
        if segm.ndim != 2:
            raise AssertionError(f"Expect segmentation of 2 dimensions, got {segm.ndim}.")
        return segm
    raise ValueError(f"Cannot convert segmentation of type '{type(segm)}' to BitMasks: polygons, "
                     f"a COCO RLE dict or an (H, W) numpy mask")


def annotations_to_instances(annos, image_size, mask_format="polygon"):
    """Instances with gt_boxes, gt_classes and, when the annotations have them, gt_masks
    (PolygonMasks, or BitMasks for mask_format 'bitmask') and gt_keypoints."""
    boxes = (np.stack([BoxMode.convert(a["bbox"], a["bbox_mode"], BoxMode.XYXY_ABS)
                       for a in annos]) if len(annos) else np.zeros((0, 4)))
    target = Instances(image_size)
    target.gt_boxes = Boxes(boxes)
    target.gt_classes = torch.tensor([int(a["category_id"]) for a in annos], dtype=torch.int64)
    if len(annos) and "segmentation" in annos[0]:
        segms = [a["segmentation"] for a in annos]
        if mask_format == "polygon":
            try:
                target.gt_masks = PolygonMasks(segms)
            except ValueError as e:
                raise ValueError("Failed to use mask_format=='polygon' from the given "
                                 "annotations!") from e
        elif mask_format == "bitmask":
            target.gt_masks = BitMasks(torch.stack(
                [torch.from_numpy(np.ascontiguousarray(_bitmask(s, image_size))) for s in segms]))
        else:
            raise AssertionError(f"mask_format is 'polygon' or 'bitmask', got {mask_format!r}")
    if len(annos) and "keypoints" in annos[0]:
        target.gt_keypoints = Keypoints(np.asarray([a.get("keypoints", []) for a in annos],
                                                   dtype=np.float32))
    return target


def filter_empty_instances(instances, by_box=True, by_mask=True, box_threshold=1e-5,
                           return_mask=False):
    """The instances whose box (and mask) is not empty (and the kept mask)."""
    if not (by_box or by_mask):
        raise AssertionError("filter_empty_instances: by_box or by_mask must be True")
    keep = []
    if by_box:
        keep.append(instances.gt_boxes.nonempty(threshold=box_threshold))
    if instances.has("gt_masks") and by_mask:
        keep.append(instances.gt_masks.nonempty())
    if not keep:
        return instances
    m = keep[0]
    for k in keep[1:]:
        m = m & k
    return (instances[m], m) if return_mask else instances[m]


def check_metadata_consistency(key, dataset_names):
    """Raises ValueError when the datasets' metadata differ at `key`."""
    if len(dataset_names) == 0:
        return
    entries = [getattr(MetadataCatalog.get(d), key) for d in dataset_names]
    for name, entry in zip(dataset_names, entries):
        if entry != entries[0]:
            logger = logging.getLogger(__name__)
            logger.error(f"Metadata '{key}' for dataset '{name}' is '{entry}'")
            logger.error(f"Metadata '{key}' for dataset '{dataset_names[0]}' is '{entries[0]}'")
            raise ValueError(f"Datasets have different metadata '{key}'!")


def create_keypoint_hflip_indices(dataset_names):
    """For each keypoint, the index of its mirror image (from keypoint_flip_map)."""
    if isinstance(dataset_names, str):
        dataset_names = [dataset_names]
    check_metadata_consistency("keypoint_names", dataset_names)
    check_metadata_consistency("keypoint_flip_map", dataset_names)
    meta = MetadataCatalog.get(dataset_names[0])
    names = list(meta.keypoint_names)
    flip = dict(meta.keypoint_flip_map)
    flip.update({v: k for k, v in flip.items()})
    return [names.index(flip.get(n, n)) for n in names]


def get_fed_loss_cls_weights(dataset_names, freq_weight_power=1.0):
    """Each class's image count ** freq_weight_power (the federated loss's sampling weights)."""
    if isinstance(dataset_names, str):
        dataset_names = [dataset_names]
    check_metadata_consistency("class_image_count", dataset_names)
    counts = MetadataCatalog.get(dataset_names[0]).class_image_count
    freq = torch.tensor([c["image_count"] for c in sorted(counts, key=lambda c: c["id"])])
    return freq.float() ** freq_weight_power


def gen_crop_transform_with_instance(crop_size, image_size, instance):
    """A crop_size window at a drawn position that holds the instance's box centre."""
    crop_size = np.asarray(crop_size, dtype=np.int32)
    bbox = BoxMode.convert(instance["bbox"], instance["bbox_mode"], BoxMode.XYXY_ABS)
    center_yx = ((bbox[1] + bbox[3]) * 0.5, (bbox[0] + bbox[2]) * 0.5)
    if not (image_size[0] >= center_yx[0] and image_size[1] >= center_yx[1]):
        raise AssertionError("The annotation bounding box is outside of the image!")
    if not (image_size[0] >= crop_size[0] and image_size[1] >= crop_size[1]):
        raise AssertionError("Crop size is larger than image size!")
    min_yx = np.maximum(np.floor(center_yx).astype(np.int32) - crop_size, 0)
    max_yx = np.maximum(np.asarray(image_size, dtype=np.int32) - crop_size, 0)
    max_yx = np.minimum(max_yx, np.ceil(center_yx).astype(np.int32))
    y0 = np.random.randint(min_yx[0], max_yx[0] + 1)
    x0 = np.random.randint(min_yx[1], max_yx[1] + 1)
    return T.CropTransform(x0, y0, crop_size[1], crop_size[0])


def build_augmentation(cfg, is_train):
    """ResizeShortestEdge from INPUT.MIN_SIZE_* / MAX_SIZE_*, and for training RandomFlip as
    INPUT.RANDOM_FLIP says (the default augmentations; DatasetMapper adds INPUT.CROP's)."""
    if is_train:
        min_size, max_size = cfg.INPUT.MIN_SIZE_TRAIN, cfg.INPUT.MAX_SIZE_TRAIN
        sample_style = cfg.INPUT.MIN_SIZE_TRAIN_SAMPLING
    else:
        min_size, max_size, sample_style = cfg.INPUT.MIN_SIZE_TEST, cfg.INPUT.MAX_SIZE_TEST, "choice"
    augmentation = [T.ResizeShortestEdge(min_size, max_size, sample_style)]
    if is_train and cfg.INPUT.RANDOM_FLIP != "none":
        augmentation.append(T.RandomFlip(horizontal=cfg.INPUT.RANDOM_FLIP == "horizontal",
                                         vertical=cfg.INPUT.RANDOM_FLIP == "vertical"))
    return augmentation


build_transform_gen = build_augmentation
