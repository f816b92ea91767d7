"""Detectron2's Visualizer primitives (draw_box, draw_text, draw_line, draw_circle, draw_polygon,
draw_binary_mask, draw_soft_mask) on a VisImage: each draws with detkit's OpenCV drawer
(_C.draw_overlays) onto the canvas at its scale, in image coordinates times the scale; the soft
mask and the circle are blended / filled in numpy. Pixels differ from Detectron2's matplotlib
drawing by design; the API and the output's shape are Detectron2's."""
import colorsys

import numpy as np

from .. import _C
from .color_names import to_rgb
from .colormap import random_color
from .vis_masks import binary_array, has_holes


def change_brightness(color, factor):
    """`color` lighter (factor in (0, 1]) or darker ([-1, 0)) in HLS lightness, as Detectron2."""
    if not -1.0 <= factor <= 1.0:
        raise ValueError(f"brightness factor must be in [-1, 1], got {factor}")
    hue, lightness, saturation = colorsys.rgb_to_hls(*to_rgb(color))
    lightness = min(1.0, max(0.0, lightness * (1.0 + factor)))
    return tuple(float(np.clip(v, 0, 1)) for v in colorsys.hls_to_rgb(hue, lightness, saturation))


def _scaled(instance, s):
    out = dict(instance)
    for key in ("box", "outline"):
        if key in out:
            out[key] = [float(v) * s for v in out[key]]
    if "polygons" in out:
        out["polygons"] = [[float(v) * s for v in p] for p in out["polygons"]]
    if "keypoints" in out:
        out["keypoints"] = [[float(x) * s, float(y) * s, float(p)] for x, y, p in out["keypoints"]]
    if "color" in out:
        out["color"] = list(to_rgb(out["color"]))
    return out


class VisualizerPrimitives:
    """The drawing primitives; subclasses set self.output (a VisImage) and self.metadata."""

    def _draw(self, instances, mask_alpha=0.5, skeleton=(), opacity=1.0):
        """Draws `instances` (_C.draw_overlays dicts in image coordinates) onto the canvas;
        opacity < 1 blends the result with the canvas as it was."""
        scale = self.output.scale
        before = self.output.canvas
        drawn = _C.draw_overlays(before, [_scaled(d, scale) for d in instances], 1.0,
                                 float(mask_alpha), list(skeleton))
        if opacity < 1.0:
            blended = before * (1.0 - opacity) + drawn.astype(np.float32) * opacity
            drawn = np.clip(np.rint(blended), 0, 255).astype(np.uint8)
        self.output.canvas = drawn
        return self.output

    def draw_text(self, text, position, *, font_size=None, color="g",
                  horizontal_alignment="center", rotation=0):
        """`text` on a filled label of `color` with its corner at `position` (x, y). detkit's
        labels have the drawer's font at the canvas's size; font_size, horizontal_alignment and
        rotation are not followed (Detectron2 draws matplotlib text there)."""
        x, y = (float(v) for v in position)
        return self._draw([{"box": [x, y, x, y], "draw_box": False, "label": str(text),
                            "color": color}])

    def draw_box(self, box_coord, alpha=0.5, edge_color="g", line_style="-"):
        """An XYXY box outline in `edge_color`, `alpha` opaque (drawn solid whatever the
        line_style)."""
        x0, y0, x1, y1 = (float(v) for v in box_coord)
        return self._draw([{"box": [x0, y0, x1, y1], "color": edge_color}], opacity=alpha)

    def draw_line(self, x_data, y_data, color, linestyle="-", linewidth=None):
        """The polyline through (x_data[k], y_data[k]) in `color`, solid, the drawer's width."""
        if len(x_data) != len(y_data):
            raise ValueError(f"draw_line: {len(x_data)} x values but {len(y_data)} y values")
        points = [(float(x), float(y)) for x, y in zip(x_data, y_data)]
        segments = [{"outline": [*a, *b], "color": color} for a, b in zip(points, points[1:])]
        return self._draw(segments)

    def draw_circle(self, circle_coord, color, radius=3):
        """A filled disc of `radius` (image pixels) at circle_coord, in `color`."""
        rgb = np.asarray(to_rgb(color)) * 255
        s = self.output.scale
        cx, cy = (float(v) * s for v in circle_coord)
        canvas = self.output.canvas.copy()
        rows, cols = np.ogrid[:canvas.shape[0], :canvas.shape[1]]
        inside = (cols - cx) ** 2 + (rows - cy) ** 2 <= (float(radius) * s) ** 2
        canvas[inside] = np.rint(rgb).astype(np.uint8)
        self.output.canvas = canvas
        return self.output

    def draw_polygon(self, segment, color, edge_color=None, alpha=0.5):
        """The polygon (N, 2) filled with `color` at `alpha`, outlined in edge_color (Detectron2's
        default: the colour, or a darker one when alpha > 0.8)."""
        points = np.asarray(segment, dtype=np.float64).reshape(-1)
        if points.size < 6 or points.size % 2:
            raise ValueError(f"draw_polygon: expected (N >= 3, 2) points, got {np.shape(segment)}")
        if edge_color is None:
            edge_color = change_brightness(color, -0.7) if alpha > 0.8 else color
        flat = points.tolist()
        return self._draw([{"polygons": [flat], "color": color},
                           {"outline": flat, "color": edge_color}], mask_alpha=alpha)

    def _blend(self, weights, color, alpha):
        """`color` blended into the canvas weighted by `weights` (H, W) * alpha, the weights
        taken at each canvas pixel's nearest image pixel."""
        canvas, scale = self.output.canvas, self.output.scale
        height, width = weights.shape
        rows = np.minimum((np.arange(canvas.shape[0]) + 0.5) / scale, height - 1).astype(int)
        cols = np.minimum((np.arange(canvas.shape[1]) + 0.5) / scale, width - 1).astype(int)
        weight = np.clip(weights[rows][:, cols], 0, 1)[..., None] * alpha
        blended = canvas * (1.0 - weight) + np.asarray(color, np.float32) * 255 * weight
        self.output.canvas = np.clip(np.rint(blended), 0, 255).astype(np.uint8)

    def _draw_text_in_mask(self, binary_mask, text, color):
        ys, xs = np.nonzero(binary_mask)
        if len(xs):
            self.draw_text(text, (float(np.median(xs)), float(np.median(ys))), color=color)

    def draw_binary_mask(self, binary_mask, color=None, *, edge_color=None, text=None, alpha=0.5,
                         area_threshold=10):
        """The (H, W) mask filled with `color` at `alpha` with a darker outline (a mask with
        holes: blended without outline, as Detectron2 paints it), and `text` at its median
        pixel. A mask smaller than area_threshold pixels in all is not drawn
        (Detectron2 drops each such connected part); edge_color is not followed (the outline
        is the drawer's darker shade of the colour)."""
        if color is None:
            color = random_color(rgb=True, maximum=1)
        color = to_rgb(color)
        mask = binary_array(binary_mask, self.output.height, self.output.width, "binary mask")
        area = int(mask.sum())
        if area == 0 or area < (area_threshold or 0):
            return self.output
        if has_holes(mask):  # Detectron2 paints these as an image, without outline
            self._blend(mask.astype(np.float32), color, alpha)
        else:
            self._draw([{"mask": mask, "color": color}], mask_alpha=alpha)
        if text is not None:
            self._draw_text_in_mask(mask, text, change_brightness(color, 0.7))
        return self.output

    def draw_soft_mask(self, soft_mask, color=None, *, text=None, alpha=0.5):
        """`color` blended into the image weighted by soft_mask (H, W, values 0..1) * alpha, and
        `text` on the part above 0.5."""
        if color is None:
            color = random_color(rgb=True, maximum=1)
        color = to_rgb(color)
        height, width = self.output.height, self.output.width
        weights = np.asarray(soft_mask, dtype=np.float32)
        if weights.shape != (height, width):
            raise ValueError(f"draw_soft_mask: a mask of shape {weights.shape} on an image of "
                             f"size ({height}, {width})")
        self._blend(weights, color, alpha)
        if text is not None:
            self._draw_text_in_mask(weights > 0.5, text, change_brightness(color, 0.7))
        return self.output
