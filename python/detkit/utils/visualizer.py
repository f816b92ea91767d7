"""detkit.utils.visualizer: Detectron2's Visualizer (ColorMode, VisImage, Visualizer with
draw_instance_predictions, draw_dataset_dict, overlay_instances, overlay_rotated_instances,
draw_and_connect_keypoints and the draw_* primitives), drawn by detkit's OpenCV drawer, the one
`detkit infer` draws with. Pixels differ from Detectron2's matplotlib figures by design; names,
arguments and output shapes are Detectron2's. Semantic / panoptic segmentation drawing is not
provided."""
import math
from enum import Enum

import numpy as np
import torch

from ..structures import Boxes, BoxMode, Keypoints, RotatedBoxes
from .color_names import to_rgb
from .vis_image import VisImage
from .vis_masks import convert_masks
from .vis_primitives import VisualizerPrimitives

__all__ = ["ColorMode", "VisImage", "Visualizer"]

_RED = (1.0, 0.0, 0.0)


class ColorMode(Enum):
    IMAGE = 0  # a colour per instance, translucent masks
    SEGMENTATION = 1  # colours of metadata.thing_colors (jittered), more opaque masks
    IMAGE_BW = 2  # as IMAGE, with the image grey outside the predicted masks


def _labels(classes, scores, class_names, is_crowd=None):
    """Detectron2's text labels, except that a class without a name reads "class N" (as
    `detkit infer` labels it) where Detectron2 writes the bare number."""
    labels = None
    if classes is not None:
        names = list(class_names or [])
        labels = [names[c] if 0 <= c < len(names) else f"class {c}" for c in classes]
    if scores is not None:
        percent = [f"{float(s) * 100:.0f}%" for s in scores]
        labels = percent if labels is None else [f"{a} {b}" for a, b in zip(labels, percent)]
    if labels is not None and is_crowd is not None:
        labels = [a + ("|crowd" if crowd else "") for a, crowd in zip(labels, is_crowd)]
    return labels


def _numpy(x):
    if isinstance(x, (Boxes, RotatedBoxes, Keypoints)):
        x = x.tensor
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


class Visualizer(VisualizerPrimitives):
    def __init__(self, img_rgb, metadata=None, scale=1.0, instance_mode=ColorMode.IMAGE,
                 font_size_scale=1.0):
        image = np.asarray(img_rgb)
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"Visualizer: the image must be RGB (H, W, 3), got {image.shape}")
        self.img = image.clip(0, 255).astype(np.uint8)
        self.metadata = metadata
        self.output = VisImage(self.img, scale=scale)
        self._instance_mode = ColorMode(instance_mode)
        self.keypoint_threshold = 0.05
        self.cpu_device = torch.device("cpu")

    def _meta(self, key):
        return self.metadata.get(key, None) if self.metadata is not None else None

    def _jitter(self, color):
        direction = np.random.rand(3)
        direction = direction / np.linalg.norm(direction) * 0.5
        return tuple(np.clip(direction + np.asarray(to_rgb(color)), 0, 1).tolist())

    def _class_colors(self, classes):
        colors = self._meta("thing_colors")
        if self._instance_mode != ColorMode.SEGMENTATION or not colors or classes is None:
            return None
        return [self._jitter([v / 255 for v in colors[c]]) for c in classes]

    def draw_instance_predictions(self, predictions, jittering=True):
        """An Instances' pred_boxes, pred_classes, scores, pred_masks and pred_keypoints."""
        def field(name):
            return predictions.get(name) if predictions.has(name) else None
        classes = field("pred_classes")
        classes = None if classes is None else [int(c) for c in classes.tolist()]
        scores = field("scores")
        labels = _labels(classes, None if scores is None else scores.tolist(),
                         self._meta("thing_classes"))
        masks = field("pred_masks")
        masks = None if masks is None else _numpy(masks).astype(np.uint8)
        colors, alpha = self._class_colors(classes), 0.5
        if colors is not None:
            alpha = 0.8
            if not jittering:
                colors = [tuple(v / 255 for v in self._meta("thing_colors")[c]) for c in classes]
        if self._instance_mode == ColorMode.IMAGE_BW:
            self.output.reset_image(self._grayscale(None if masks is None else masks.any(0)))
            alpha = 0.3
        return self.overlay_instances(boxes=field("pred_boxes"), labels=labels, masks=masks,
                                      keypoints=field("pred_keypoints"), assigned_colors=colors,
                                      alpha=alpha)

    def _grayscale(self, keep=None):
        """The image in grey (channel mean), its colours kept where `keep` (H, W) is True."""
        grey = np.repeat(self.img.astype(np.float32).mean(axis=2, keepdims=True), 3, axis=2)
        if keep is not None:
            grey[keep] = self.img[keep]
        return grey

    def draw_dataset_dict(self, dic):
        """A dataset dict's annotations: bbox (bbox_mode; 5 values: XYWHA rotated boxes),
        category_id, iscrowd, segmentation (polygons or RLE) and keypoints."""
        annos = dic.get("annotations", None)
        if annos:
            masks = [a["segmentation"] for a in annos] if "segmentation" in annos[0] else None
            keypoints = None
            if "keypoints" in annos[0]:
                keypoints = np.asarray([a["keypoints"] for a in annos], np.float64)
                keypoints = keypoints.reshape(len(annos), -1, 3)
            boxes = [BoxMode.convert(list(a["bbox"]), a["bbox_mode"], BoxMode.XYXY_ABS)
                     if len(a["bbox"]) == 4 else list(a["bbox"]) for a in annos]
            if len({len(b) for b in boxes}) > 1:
                raise ValueError("draw_dataset_dict: the annotations mix 4-value and 5-value boxes")
            categories = [a["category_id"] for a in annos]
            labels = _labels(categories, None, self._meta("thing_classes"),
                             is_crowd=[a.get("iscrowd", 0) for a in annos])
            self.overlay_instances(labels=labels, boxes=np.asarray(boxes, np.float64),
                                   masks=masks, keypoints=keypoints,
                                   assigned_colors=self._class_colors(categories))
        for key in ("sem_seg", "sem_seg_file_name", "pan_seg", "pan_seg_file_name"):
            if key in dic:
                raise NotImplementedError(f"draw_dataset_dict: '{key}': detkit's Visualizer does "
                                          f"not draw semantic or panoptic segmentation")
        return self.output

    def overlay_instances(self, *, boxes=None, labels=None, masks=None, keypoints=None,
                          assigned_colors=None, alpha=0.5):
        """Boxes (Boxes, RotatedBoxes, (N, 4) XYXY or (N, 5) XYWHA arrays), masks (any of
        Detectron2's formats), keypoints (N, K, 3) and labels, each instance in its colour
        (assigned_colors, else detkit's palette by index), masks `alpha` opaque."""
        count = None
        height, width = self.output.height, self.output.width
        if boxes is not None:
            boxes = _numpy(boxes)
            if boxes.ndim != 2 or boxes.shape[1] not in (4, 5):
                if boxes.size == 0:
                    boxes = boxes.reshape(0, 4)
                else:
                    raise ValueError(f"overlay_instances: boxes must be (N, 4) or (N, 5), got "
                                     f"{boxes.shape}")
            count = len(boxes)
        for name, value in (("masks", masks), ("keypoints", keypoints), ("labels", labels),
                            ("assigned_colors", assigned_colors)):
            if value is not None and count is not None and len(value) != count:
                raise ValueError(f"overlay_instances: {len(value)} {name} for {count} instances")
            if value is not None and count is None and name in ("masks", "keypoints"):
                count = len(value)
        if not count:
            return self.output
        if boxes is not None and boxes.shape[1] == 5:
            return self.overlay_rotated_instances(boxes, labels, assigned_colors)
        masks = None if masks is None else convert_masks(masks, height, width)
        keypoints = None if keypoints is None else _numpy(keypoints)
        instances = []
        for i in range(count):
            d = {} if assigned_colors is None else {"color": assigned_colors[i]}
            if masks is not None:
                d.update(masks[i].drawn())
            if keypoints is not None:
                d["keypoints"] = keypoints[i].tolist()
            if boxes is not None:
                d["box"] = boxes[i].tolist()
            elif masks is not None and labels is not None:
                center = masks[i].center()
                if center is not None:  # the label at the mask's median pixel
                    d.update(box=[*center, *center], draw_box=False)
            if labels is not None and "box" in d:
                d["label"] = str(labels[i])
            instances.append(d)
        self._draw(instances, mask_alpha=alpha, skeleton=self._skeleton())
        if keypoints is not None:
            for points in keypoints:
                self._connect_person(points)
        return self.output

    def overlay_rotated_instances(self, boxes=None, labels=None, assigned_colors=None):
        """(N, 5) XYWHA boxes as outlines, each labelled at its top-left corner."""
        boxes = _numpy(boxes).reshape(-1, 5)
        instances = []
        for i, (cx, cy, w, h, angle) in enumerate(boxes.tolist()):
            theta = math.radians(angle)
            c, s = math.cos(theta), math.sin(theta)
            corners = [(s * yy + c * xx + cx, c * yy - s * xx + cy)
                       for xx, yy in ((-w / 2, h / 2), (-w / 2, -h / 2), (w / 2, -h / 2),
                                      (w / 2, h / 2))]
            d = {"outline": [v for p in corners for v in p]}
            if assigned_colors is not None:
                d["color"] = assigned_colors[i]
            if labels is not None:
                x, y = corners[1]
                d.update(box=[x, y, x, y], draw_box=False, label=str(labels[i]))
            instances.append(d)
        return self._draw(instances)

    def _skeleton(self):
        """metadata.keypoint_connection_rules as index pairs with their colours."""
        names, rules = self._meta("keypoint_names"), self._meta("keypoint_connection_rules")
        if not names or not rules:
            return []
        index = {n: k for k, n in enumerate(names)}
        return [((index[a], index[b]), tuple(int(v) for v in color)) for a, b, color in rules
                if a in index and b in index]

    def _connect_person(self, points):
        """Detectron2's extra person lines: nose to mid-shoulder to mid-hip, in red."""
        names = self._meta("keypoint_names")
        if not names:
            return
        seen = {n: p[:2] for n, p in zip(names, points) if p[2] > self.keypoint_threshold}
        if "left_shoulder" not in seen or "right_shoulder" not in seen:
            return
        shoulder = (np.asarray(seen["left_shoulder"]) + seen["right_shoulder"]) / 2
        if "nose" in seen:
            self.draw_line([seen["nose"][0], shoulder[0]], [seen["nose"][1], shoulder[1]], _RED)
        if "left_hip" in seen and "right_hip" in seen:
            hip = (np.asarray(seen["left_hip"]) + seen["right_hip"]) / 2
            self.draw_line([hip[0], shoulder[0]], [hip[1], shoulder[1]], _RED)

    def draw_and_connect_keypoints(self, keypoints):
        """One instance's (K, 3) keypoints above the threshold, joined by the skeleton."""
        points = _numpy(keypoints).reshape(-1, 3)
        self._draw([{"keypoints": points.tolist()}], skeleton=self._skeleton())
        self._connect_person(points)
        return self.output

    def get_output(self):
        return self.output
