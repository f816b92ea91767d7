"""PointRend's point sampling: features bilinearly read at [0, 1] x [0, 1] points, regular grids,
the most uncertain points (random oversampling or on a grid), box-relative to image coordinates,
and ground-truth mask labels at points.
Shapes: R regions (boxes, or images for semantic segmentation), P points, C channels."""
import torch
from torch.nn import functional as F

from ...layers import cat, shapes_to_tensor
from ...structures import BitMasks, Boxes


def point_sample(input, point_coords, **kwargs):
    """grid_sample at points in [0, 1] x [0, 1] (x, y): input (N, C, H, W), point_coords
    (N, P, 2) -> (N, C, P), or (N, Hg, Wg, 2) -> (N, C, Hg, Wg). kwargs go to grid_sample."""
    points_3d = point_coords.dim() == 3
    if points_3d:
        point_coords = point_coords.unsqueeze(2)
    sampled = F.grid_sample(input, 2.0 * point_coords - 1.0, **kwargs)
    if points_3d:
        sampled = sampled.squeeze(3)
    return sampled


def generate_regular_grid_point_coords(R, side_size, device):
    """The centres of a side_size x side_size grid of cells over [0, 1] x [0, 1], row-major,
    as (R, side_size ** 2, 2) (one grid expanded R times)."""
    half_square = torch.tensor([[[0.5, 0, 0.5], [0, 0.5, 0.5]]], device=device)
    grid = F.affine_grid(half_square, torch.Size((1, 1, side_size, side_size)),
                         align_corners=False)
    return grid.view(1, -1, 2).expand(R, -1, -1)


def get_uncertain_point_coords_with_randomness(coarse_logits, uncertainty_func, num_points,
                                               oversample_ratio, importance_sample_ratio):
    """PointRend's training points for coarse_logits (N, C or 1, H, W): num_points *
    oversample_ratio uniform random points, of which the int(importance_sample_ratio *
    num_points) most uncertain (uncertainty_func of their sampled logits, (N, 1, P)) are kept,
    the rest of the num_points drawn uniformly again. Returns (N, num_points, 2)."""
    assert oversample_ratio >= 1
    assert 0 <= importance_sample_ratio <= 1
    num_regions = coarse_logits.shape[0]
    num_candidates = int(num_points * oversample_ratio)
    candidates = torch.rand(num_regions, num_candidates, 2, device=coarse_logits.device)
    # uncertainty of the logits interpolated at each point, not interpolated uncertainty
    uncertainties = uncertainty_func(point_sample(coarse_logits, candidates, align_corners=False))
    num_uncertain = int(importance_sample_ratio * num_points)
    num_random = num_points - num_uncertain
    chosen = torch.topk(uncertainties[:, 0, :], k=num_uncertain, dim=1)[1]
    offsets = num_candidates * torch.arange(num_regions, dtype=torch.long,
                                            device=coarse_logits.device)
    chosen = chosen + offsets[:, None]
    point_coords = candidates.view(-1, 2)[chosen.view(-1), :].view(num_regions, num_uncertain, 2)
    if num_random > 0:
        extra = torch.rand(num_regions, num_random, 2, device=coarse_logits.device)
        point_coords = cat([point_coords, extra], dim=1)
    return point_coords


def get_uncertain_point_coords_on_grid(uncertainty_map, num_points):
    """The min(num_points, H * W) highest cells of uncertainty_map (N, 1, H, W): their flat
    indices (N, P) and their cell centres in [0, 1] x [0, 1] (N, P, 2)."""
    R, _, H, W = uncertainty_map.shape
    cell_h = 1.0 / float(H)
    cell_w = 1.0 / float(W)
    num_points = min(H * W, num_points)
    point_indices = torch.topk(uncertainty_map.view(R, H * W), k=num_points, dim=1)[1]
    point_coords = torch.zeros(R, num_points, 2, dtype=torch.float,
                               device=uncertainty_map.device)
    point_coords[:, :, 0] = cell_w / 2.0 + (point_indices % W).to(torch.float) * cell_w
    point_coords[:, :, 1] = cell_h / 2.0 + (point_indices // W).to(torch.float) * cell_h
    return point_indices, point_coords


def point_sample_fine_grained_features(features_list, feature_scales, boxes, point_coords):
    """Features of every map of features_list (N, Ci, Hi, Wi), of scale feature_scales[i]
    (1 / stride), at point_coords (R, P, 2) relative to the R boxes of `boxes` (list of N
    Boxes), concatenated over the maps: (R, sum Ci, P); and the points in image
    coordinates (R, P, 2)."""
    cat_boxes = Boxes.cat(boxes)
    boxes_per_image = [b.tensor.size(0) for b in boxes]
    coords_in_image = get_point_coords_wrt_image(cat_boxes.tensor, point_coords)
    coords_per_image = torch.split(coords_in_image, boxes_per_image)

    features = []
    for image_index, image_coords in enumerate(coords_per_image):
        per_map = []
        for map_index, feature_map in enumerate(features_list):
            h, w = feature_map.shape[-2:]
            map_extent = shapes_to_tensor([w, h]) / feature_scales[map_index]
            normalized = image_coords / map_extent.to(feature_map.device)
            sampled = point_sample(feature_map[image_index].unsqueeze(0),
                                   normalized.unsqueeze(0), align_corners=False)
            per_map.append(sampled.squeeze(0).transpose(1, 0))
        features.append(cat(per_map, dim=1))
    return cat(features, dim=0), coords_in_image


def get_point_coords_wrt_image(boxes_coords, point_coords):
    """Box-relative [0, 1] x [0, 1] point_coords (R, P, 2) in image coordinates of the XYXY
    boxes_coords (R, 4): x0 + x * (x1 - x0), y0 + y * (y1 - y0). No gradient."""
    with torch.no_grad():
        in_image = point_coords.clone()
        widths = boxes_coords[:, None, 2] - boxes_coords[:, None, 0]
        heights = boxes_coords[:, None, 3] - boxes_coords[:, None, 1]
        in_image[:, :, 0] = in_image[:, :, 0] * widths
        in_image[:, :, 1] = in_image[:, :, 1] * heights
        in_image[:, :, 0] += boxes_coords[:, None, 0]
        in_image[:, :, 1] += boxes_coords[:, None, 1]
    return in_image


def sample_point_labels(instances, point_coords):
    """The ground-truth masks (BitMasks gt_masks of each image's Instances) bilinearly read at
    point_coords (R, P, 2) in image pixels, R = all instances: (R, P) in [0, 1]."""
    with torch.no_grad():
        labels = []
        coords_per_image = torch.split(point_coords, [len(x) for x in instances])
        for image_index, instances_per_image in enumerate(instances):
            if len(instances_per_image) == 0:
                continue
            if not isinstance(instances_per_image.gt_masks, BitMasks):
                raise TypeError("PointRend's point labels need gt_masks as BitMasks: set "
                                "INPUT.MASK_FORMAT to 'bitmask'")
            masks = instances_per_image.gt_masks.tensor
            h, w = instances_per_image.gt_masks.image_size
            extent = torch.tensor([w, h], dtype=torch.float, device=masks.device)
            labels.append(point_sample(masks.to(torch.float32).unsqueeze(1),
                                       coords_per_image[image_index] / extent,
                                       align_corners=False).squeeze(1))
    return cat(labels)
