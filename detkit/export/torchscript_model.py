# The methods of an exported detkit model (`detkit export --format torchscript`): TorchScript
# that detkit compiles into model.ts (detkit/export/torchscript_export.cpp), the inference of
# GeneralizedRCNN (Faster / Mask / Keypoint / Cascade R-CNN), RetinaNet, SemanticSegmentor and
# PanopticFPN over ResNet + FPN.
#
# The module's attributes describe the model (set by the exporter from the C++ model and the
# config): `weights` holds every parameter and buffer under Detectron2's state-dict name,
# `conv_spec` / `conv_norm` each convolution's stride, padding, dilation, groups, ReLU and norm;
# the rest are the config's test-time settings. Box decoding, proposal selection, score
# thresholds and postprocessing follow detkit's C++ (and Detectron2's) order of operations;
# ROIAlign, NMS and mask pasting call detkit's own ops (ops.detkit.*, libdetkit_ops.so), so
# an exported model gives detkit's detections wherever the file runs.
#
# Not Python: this text is compiled by libtorch's TorchScript compiler, with no Python module in
# scope: `torch.<op>` is an aten op, `ops.detkit.<op>` one of detkit's (TorchScript's own spelling
# in a saved file); dtypes by .float() / .long() / new_zeros, errors by assert.

def forward(self, image: Tensor, height: int = 0, width: int = 0) -> Dict[str, Tensor]:
    # image: (C, H, W) in the config's INPUT.FORMAT, uint8 or float 0..255, already resized as
    # the test mapper resizes (INPUT.MIN_SIZE_TEST / MAX_SIZE_TEST). height, width: the size to
    # report detections in (the original image's; 0 = the input's own).
    # Returns pred_boxes (R, 4) XYXY, scores (R), pred_classes (R) int64, and where the model
    # has them pred_masks (R, height, width) bool, pred_keypoints (R, K, 3) x, y, score and
    # pred_keypoint_heatmaps (R, K, S, S). SemanticSegmentor: sem_seg (C, height, width) float
    # logits alone; PanopticFPN: the instances, sem_seg, panoptic_seg (height, width) int32
    # segment ids (0: void) and segments_info (S, 5) int64 rows id, isthing, category_id,
    # instance_id (-1 for stuff), area (pixels), in the order placed.
    assert image.dim() == 3 and image.size(0) == self.pixel_mean.size(0), \
        "detkit model: the input must be a (" + str(self.pixel_mean.size(0)) + ", H, W) image"
    image_h = image.size(1)
    image_w = image.size(2)
    out_h = height if height > 0 else image_h
    out_w = width if width > 0 else image_w
    x = self.preprocess(image)
    features = self.backbone(x)
    if self.meta_arch == "SemanticSegmentor":
        result: Dict[str, Tensor] = {}
        result["sem_seg"] = self.sem_seg(features, image_h, image_w, out_h, out_w)
        return result
    if self.meta_arch == "RetinaNet":
        found = self.retinanet_inference(features, image_h, image_w)
    else:
        proposals = self.rpn(features, image_h, image_w)
        found = self.roi_heads(features, proposals, image_h, image_w)
    out = self.postprocess(found, image_h, image_w, out_h, out_w)
    if self.panoptic_on:
        sem_seg = self.sem_seg(features, image_h, image_w, out_h, out_w)
        out["sem_seg"] = sem_seg
        combined = self.combine(out, sem_seg.argmax(0))
        out["panoptic_seg"] = combined[0]
        out["segments_info"] = combined[1]
    return out

def preprocess(self, image: Tensor) -> Tensor:
    x = (image.float() - self.pixel_mean) / self.pixel_std
    d = self.size_divisibility
    h = x.size(1)
    w = x.size(2)
    if d > 1:
        h = (h + d - 1) // d * d
        w = (w + d - 1) // d * d
    padded = x.new_zeros([1, x.size(0), h, w])
    padded[0, :, : x.size(1), : x.size(2)].copy_(x)
    return padded

# ---- layers ----------------------------------------------------------------------------------

def conv(self, name: str, x: Tensor) -> Tensor:
    spec = self.conv_spec[name]  # stride, padding, dilation, groups, relu
    bias: Optional[Tensor] = None
    if name + ".bias" in self.weights:
        bias = self.weights[name + ".bias"]
    y = torch.conv2d(x, self.weights[name + ".weight"], bias, [spec[0], spec[0]], [spec[1], spec[1]],
                     [spec[2], spec[2]], spec[3])
    norm = self.conv_norm[name]
    if norm == "GN":
        y = torch.group_norm(y, 32, self.weights[name + ".norm.weight"], self.weights[name + ".norm.bias"],
                             1e-5, False)
    elif norm != "":  # FrozenBN, and BN / SyncBN in eval: the running statistics
        p = name + ".norm."
        y = torch.batch_norm(y, self.weights[p + "weight"], self.weights[p + "bias"],
                             self.weights[p + "running_mean"], self.weights[p + "running_var"],
                             False, 0.0, 1e-5, False)
    if spec[4] == 1:
        y = torch.relu(y)
    return y

def deconv(self, name: str, x: Tensor) -> Tensor:
    spec = self.conv_spec[name]  # stride, padding
    return torch.conv_transpose2d(x, self.weights[name + ".weight"], self.weights[name + ".bias"],
                                  [spec[0], spec[0]], [spec[1], spec[1]])

def linear(self, name: str, x: Tensor) -> Tensor:
    return torch.linear(x, self.weights[name + ".weight"], self.weights[name + ".bias"])

# ---- backbone: ResNet + FPN ------------------------------------------------------------------

def backbone(self, x: Tensor) -> Dict[str, Tensor]:
    bottom: Dict[str, Tensor] = {}
    x = self.conv(self.resnet_stem, x)
    x = torch.max_pool2d(x, [3, 3], [2, 2], [1, 1])
    bottom["stem"] = x
    for s in range(len(self.resnet_stages)):
        stage = self.resnet_stages[s]
        for b in range(self.resnet_blocks[s]):
            x = self.resnet_block(stage + "." + str(b), x)
        bottom[self.resnet_stage_names[s]] = x
    out: Dict[str, Tensor] = {}
    n = len(self.fpn_in)
    results: List[Tensor] = []
    prev = self.conv(self.fpn_lateral[n - 1], bottom[self.fpn_in[n - 1]])
    results.append(self.conv(self.fpn_output[n - 1], prev))
    for j in range(n - 1):
        i = n - 2 - j
        up = torch.upsample_nearest2d(prev, [prev.size(2) * 2, prev.size(3) * 2], None, None)
        prev = self.conv(self.fpn_lateral[i], bottom[self.fpn_in[i]]) + up
        if self.fpn_fuse_avg:
            prev = prev / 2
        results.insert(0, self.conv(self.fpn_output[i], prev))
    for i in range(n):
        out[self.fpn_out[i]] = results[i]
    if self.fpn_top_block == "max_pool":
        out[self.fpn_out[n]] = torch.max_pool2d(results[n - 1], [1, 1], [2, 2], [0, 0])
    elif self.fpn_top_block == "p6p7":
        if self.fpn_top_in in bottom:
            top_in = bottom[self.fpn_top_in]
        else:
            top_in = out[self.fpn_top_in]
        p6 = self.conv(self.fpn_top_p6, top_in)
        out[self.fpn_out[n]] = p6
        out[self.fpn_out[n + 1]] = self.conv(self.fpn_top_p7, torch.relu(p6))
    return out

def resnet_block(self, name: str, x: Tensor) -> Tensor:
    out = self.conv(name + ".conv2", self.conv(name + ".conv1", x))
    if name + ".conv3" in self.conv_spec:
        out = self.conv(name + ".conv3", out)
    if name + ".shortcut" in self.conv_spec:
        out = out + self.conv(name + ".shortcut", x)
    else:
        out = out + x
    return torch.relu(out)

# ---- boxes -----------------------------------------------------------------------------------

def apply_deltas(self, deltas_in: Tensor, boxes: Tensor, weights: List[float]) -> Tensor:
    deltas = deltas_in.float()
    widths = boxes[:, 2] - boxes[:, 0]
    heights = boxes[:, 3] - boxes[:, 1]
    ctr_x = boxes[:, 0] + 0.5 * widths
    ctr_y = boxes[:, 1] + 0.5 * heights
    dx = deltas[:, 0::4] / weights[0]
    dy = deltas[:, 1::4] / weights[1]
    dw = torch.clamp_max(deltas[:, 2::4] / weights[2], self.scale_clamp)
    dh = torch.clamp_max(deltas[:, 3::4] / weights[3], self.scale_clamp)
    pred_ctr_x = dx * widths.unsqueeze(1) + ctr_x.unsqueeze(1)
    pred_ctr_y = dy * heights.unsqueeze(1) + ctr_y.unsqueeze(1)
    pred_w = torch.exp(dw) * widths.unsqueeze(1)
    pred_h = torch.exp(dh) * heights.unsqueeze(1)
    x1 = pred_ctr_x - 0.5 * pred_w
    y1 = pred_ctr_y - 0.5 * pred_h
    x2 = pred_ctr_x + 0.5 * pred_w
    y2 = pred_ctr_y + 0.5 * pred_h
    return torch.stack([x1, y1, x2, y2], -1).reshape(deltas.size())

def clip_boxes(self, boxes: Tensor, h: int, w: int) -> Tensor:
    x1 = boxes[:, 0].clamp(0, w)
    y1 = boxes[:, 1].clamp(0, h)
    x2 = boxes[:, 2].clamp(0, w)
    y2 = boxes[:, 3].clamp(0, h)
    return torch.stack([x1, y1, x2, y2], 1)

def nonempty(self, boxes: Tensor, threshold: float) -> Tensor:
    return ((boxes[:, 2] - boxes[:, 0]) > threshold) & ((boxes[:, 3] - boxes[:, 1]) > threshold)

def anchors(self, level: int, feature: Tensor) -> Tensor:
    stride = float(self.anchor_strides[level])
    h = feature.size(2)
    w = feature.size(3)
    shifts_x = torch.arange(self.anchor_offset * stride, w * stride, stride).float()
    shifts_y = torch.arange(self.anchor_offset * stride, h * stride, stride).float()
    grid = torch.meshgrid([shifts_y, shifts_x], indexing="ij")
    sx = grid[1].reshape(-1)
    sy = grid[0].reshape(-1)
    shifts = torch.stack([sx, sy, sx, sy], 1)
    return (shifts.view(-1, 1, 4) + self.cell_anchors[level].view(1, -1, 4)).reshape(-1, 4)

# ---- RPN -------------------------------------------------------------------------------------

def rpn(self, features: Dict[str, Tensor], image_h: int, image_w: int) -> Tensor:
    boxes_per_level: List[Tensor] = []
    scores_per_level: List[Tensor] = []
    level_ids: List[Tensor] = []
    for level in range(len(self.rpn_in)):
        feature = features[self.rpn_in[level]]
        t = feature
        for name in self.rpn_convs:
            t = self.conv(name, t)
        logits = self.conv("proposal_generator.rpn_head.objectness_logits", t)
        deltas = self.conv("proposal_generator.rpn_head.anchor_deltas", t)
        logits = logits.permute(0, 2, 3, 1).flatten(1)
        deltas = deltas.view(deltas.size(0), -1, 4, deltas.size(2), deltas.size(3)).permute(0, 3, 4, 1, 2).flatten(1, -2)
        proposals = self.apply_deltas(deltas[0], self.anchors(level, feature), self.rpn_weights)
        k = min(logits.size(1), self.rpn_pre_topk)
        top = logits[0].topk(k)
        boxes_per_level.append(proposals.index_select(0, top[1]))
        scores_per_level.append(top[0])
        level_ids.append(torch.full([k], float(level)).long())
    boxes = torch.cat(boxes_per_level)
    scores = torch.cat(scores_per_level)
    levels = torch.cat(level_ids)
    valid = torch.isfinite(boxes).all(1) & torch.isfinite(scores)
    if not bool(valid.all()):
        boxes = boxes[valid]
        scores = scores[valid]
        levels = levels[valid]
    boxes = self.clip_boxes(boxes, image_h, image_w)
    keep = self.nonempty(boxes, self.rpn_min_size)
    if not bool(keep.all()):
        boxes = boxes[keep]
        scores = scores[keep]
        levels = levels[keep]
    kept = ops.detkit.batched_nms(boxes, scores, levels, self.rpn_nms_thresh)
    kept = kept[: self.rpn_post_topk]
    return boxes.index_select(0, kept)

# ---- ROI heads -------------------------------------------------------------------------------

def pool(self, features: Dict[str, Tensor], boxes: Tensor, resolution: int, sampling_ratio: int,
         aligned: bool) -> Tensor:
    maps: List[Tensor] = []
    for name in self.roi_in:
        maps.append(features[name])
    rois = torch.cat([boxes.new_zeros([boxes.size(0), 1]), boxes], 1)
    if len(maps) == 1:
        return ops.detkit.roi_align(maps[0], rois, self.roi_scales[0], resolution, resolution,
                                          sampling_ratio, aligned)
    sizes = ((boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])).sqrt()
    levels = torch.floor(self.roi_canonical_level + torch.log2(sizes / self.roi_canonical_size + 1e-8))
    levels = (levels.clamp(self.roi_min_level, self.roi_max_level) - self.roi_min_level).long()
    return ops.detkit.multilevel_roi_align(maps, rois, levels, self.roi_scales, resolution, resolution,
                                                 sampling_ratio, aligned)

def box_stage(self, features: Dict[str, Tensor], proposals: Tensor, stage: int) -> Tuple[Tensor, Tensor]:
    x = self.pool(features, proposals, self.box_resolution, self.box_sampling_ratio, self.box_aligned)
    for name in self.box_head_convs[stage]:
        x = self.conv(name, x)
    if len(self.box_head_fcs[stage]) > 0:
        x = x.flatten(1)
        for name in self.box_head_fcs[stage]:
            x = torch.relu(self.linear(name, x))
    x = x.flatten(1)
    predictor = self.box_predictors[stage]
    scores = self.linear(predictor + ".cls_score", x)
    deltas = self.linear(predictor + ".bbox_pred", x)
    boxes = self.apply_deltas(deltas, proposals, self.box_reg_weights[stage])
    return torch.softmax(scores, -1), boxes

def roi_heads(self, features: Dict[str, Tensor], proposals: Tensor, image_h: int,
              image_w: int) -> Dict[str, Tensor]:
    stages = len(self.box_predictors)
    probs, boxes = self.box_stage(features, proposals, 0)
    for k in range(1, stages):  # Cascade R-CNN: the previous stage's boxes, clipped, are the proposals
        stage_probs, boxes = self.box_stage(features, self.clip_boxes(boxes.detach(), image_h, image_w), k)
        probs = probs + stage_probs
    if stages > 1:
        probs = probs * (1.0 / stages)
    found = self.fast_rcnn_inference(boxes, probs, image_h, image_w)
    if self.mask_on:
        found["pred_masks"] = self.mask_head(features, found["pred_boxes"], found["pred_classes"])
    if self.keypoint_on:
        heatmaps = self.keypoint_logits(features, found["pred_boxes"])
        found["pred_keypoints"] = self.heatmaps_to_keypoints(heatmaps, found["pred_boxes"])
        found["pred_keypoint_heatmaps"] = heatmaps
    return found

def fast_rcnn_inference(self, boxes: Tensor, scores: Tensor, image_h: int, image_w: int) -> Dict[str, Tensor]:
    valid = torch.isfinite(boxes).all(1) & torch.isfinite(scores).all(1)
    if not bool(valid.all()):
        boxes = boxes[valid]
        scores = scores[valid]
    scores = scores[:, :-1]
    reg_classes = boxes.size(1) // 4
    boxes = self.clip_boxes(boxes.reshape(-1, 4), image_h, image_w).view(-1, reg_classes, 4)
    mask = scores > self.score_thresh
    inds = mask.nonzero()
    if reg_classes == 1:
        kept_boxes = boxes[:, 0].index_select(0, inds[:, 0])
    else:
        kept_boxes = boxes[mask]
    kept_scores = scores[mask]
    keep = ops.detkit.batched_nms(kept_boxes, kept_scores, inds[:, 1], self.nms_thresh)
    if self.detections_per_image >= 0:
        keep = keep[: self.detections_per_image]
    out: Dict[str, Tensor] = {}
    out["pred_boxes"] = kept_boxes.index_select(0, keep)
    out["scores"] = kept_scores.index_select(0, keep)
    out["pred_classes"] = inds[:, 1].index_select(0, keep)
    return out

def mask_head(self, features: Dict[str, Tensor], boxes: Tensor, classes: Tensor) -> Tensor:
    x = self.pool(features, boxes, self.mask_resolution, self.mask_sampling_ratio, self.mask_aligned)
    for name in self.mask_convs:
        x = self.conv(name, x)
    x = torch.relu(self.deconv("roi_heads.mask_head.deconv", x))
    logits = self.conv("roi_heads.mask_head.predictor", x)
    if logits.size(1) == 1:
        return logits.sigmoid()
    return logits[torch.arange(logits.size(0)), classes].unsqueeze(1).sigmoid()

def keypoint_logits(self, features: Dict[str, Tensor], boxes: Tensor) -> Tensor:
    x = self.pool(features, boxes, self.keypoint_resolution, self.keypoint_sampling_ratio, self.keypoint_aligned)
    for name in self.keypoint_convs:
        x = self.conv(name, x)
    x = self.deconv("roi_heads.keypoint_head.score_lowres", x)
    return torch.upsample_bilinear2d(x, [2 * x.size(2), 2 * x.size(3)], False, 2.0, 2.0)

def heatmaps_to_keypoints(self, maps: Tensor, rois: Tensor) -> Tensor:
    offset_x = rois[:, 0]
    offset_y = rois[:, 1]
    widths = (rois[:, 2] - rois[:, 0]).clamp_min(1)
    heights = (rois[:, 3] - rois[:, 1]).clamp_min(1)
    widths_ceil = widths.ceil()
    heights_ceil = heights.ceil()
    width_corrections = widths / widths_ceil
    height_corrections = heights / heights_ceil
    num_keypoints = maps.size(1)
    xy_preds = maps.new_zeros([rois.size(0), num_keypoints, 3])
    for i in range(maps.size(0)):
        out_h = int(heights_ceil[i].item())
        out_w = int(widths_ceil[i].item())
        roi_map = torch.upsample_bicubic2d(maps[i : i + 1], [out_h, out_w], False, None, None)[0]
        best = roi_map.reshape(num_keypoints, -1).max(1)
        max_score = best[0]
        pos = best[1]
        # The softmax over the box at its argmax, normalised over the heatmap's cells: detkit's form.
        pool = (maps[i] - max_score.reshape(num_keypoints, 1, 1)).exp()
        scores = pool.sum([1, 2]).reciprocal()
        x_int = pos.remainder(out_w)
        y_int = torch.div(pos - x_int, out_w, rounding_mode="floor")
        x = (x_int.float() + 0.5) * width_corrections[i]
        y = (y_int.float() + 0.5) * height_corrections[i]
        xy_preds[i, :, 0] = x + offset_x[i]
        xy_preds[i, :, 1] = y + offset_y[i]
        xy_preds[i, :, 2] = scores
    return xy_preds

# ---- RetinaNet -------------------------------------------------------------------------------

def retinanet_inference(self, features: Dict[str, Tensor], image_h: int, image_w: int) -> Dict[str, Tensor]:
    num_classes = self.num_classes
    all_boxes: List[Tensor] = []
    all_scores: List[Tensor] = []
    all_classes: List[Tensor] = []
    for level in range(len(self.retinanet_in)):
        feature = features[self.retinanet_in[level]]
        c = feature
        for name in self.retinanet_cls_convs:  # each followed by its own ReLU module
            c = torch.relu(self.conv(name, c))
        b = feature
        for name in self.retinanet_bbox_convs:
            b = torch.relu(self.conv(name, b))
        logits = self.conv("head.cls_score", c)
        deltas = self.conv("head.bbox_pred", b)
        logits = logits.view(1, -1, num_classes, logits.size(2), logits.size(3)).permute(0, 3, 4, 1, 2).reshape(-1, num_classes)
        deltas = deltas.view(1, -1, 4, deltas.size(2), deltas.size(3)).permute(0, 3, 4, 1, 2).reshape(-1, 4)
        scores = logits.sigmoid().flatten()
        candidates = (scores > self.score_thresh).nonzero().squeeze(1)
        k = min(candidates.size(0), self.retinanet_topk_candidates)
        top = scores.index_select(0, candidates).topk(k)
        candidates = candidates.index_select(0, top[1])
        anchor_idx = torch.div(candidates, num_classes, rounding_mode="floor")
        boxes = self.apply_deltas(deltas.index_select(0, anchor_idx),
                                  self.anchors(level, feature).index_select(0, anchor_idx), self.retinanet_weights)
        all_boxes.append(boxes)
        all_scores.append(top[0])
        all_classes.append(candidates.remainder(num_classes))
    boxes = torch.cat(all_boxes)
    scores = torch.cat(all_scores)
    classes = torch.cat(all_classes)
    keep = ops.detkit.batched_nms(boxes, scores, classes, self.nms_thresh)
    keep = keep[: self.detections_per_image]
    out: Dict[str, Tensor] = {}
    out["pred_boxes"] = boxes.index_select(0, keep)
    out["scores"] = scores.index_select(0, keep)
    out["pred_classes"] = classes.index_select(0, keep)
    return out

# ---- postprocessing: to the requested size ---------------------------------------------------

def postprocess(self, found: Dict[str, Tensor], image_h: int, image_w: int, out_h: int,
                out_w: int) -> Dict[str, Tensor]:
    scale_x = float(out_w) / float(image_w)
    scale_y = float(out_h) / float(image_h)
    boxes = found["pred_boxes"].clone()
    boxes[:, 0] *= scale_x
    boxes[:, 2] *= scale_x
    boxes[:, 1] *= scale_y
    boxes[:, 3] *= scale_y
    boxes = self.clip_boxes(boxes, out_h, out_w)
    keep = self.nonempty(boxes, 0.0)
    out: Dict[str, Tensor] = {}
    for key in found.keys():
        out[key] = found[key][keep]
    out["pred_boxes"] = boxes[keep]
    if "pred_masks" in out:
        out["pred_masks"] = ops.detkit.paste_masks_in_image(out["pred_masks"][:, 0], out["pred_boxes"],
                                                                  out_h, out_w, 0.5)
    if "pred_keypoints" in out:
        keypoints = out["pred_keypoints"].clone()
        keypoints[:, :, 0] *= scale_x
        keypoints[:, :, 1] *= scale_y
        out["pred_keypoints"] = keypoints
    return out

# ---- semantic head (SemSegFPNHead) and PanopticFPN's combination -----------------------------

def upsample_by(self, x: Tensor, scale: int) -> Tensor:
    # F.interpolate(scale_factor=scale, mode="bilinear", align_corners=False), as the head's.
    return torch.upsample_bilinear2d(x, [x.size(2) * scale, x.size(3) * scale], False, float(scale),
                                     float(scale))

def sem_seg(self, features: Dict[str, Tensor], image_h: int, image_w: int, out_h: int,
            out_w: int) -> Tensor:
    # The head's logits at COMMON_STRIDE, upsampled to the padded input, then Detectron2's
    # sem_seg_postprocess: cropped to the input's size, resized (bilinear) to (out_h, out_w).
    total = torch.zeros([0])
    for k in range(len(self.sem_seg_in)):
        x = features[self.sem_seg_in[k]]
        for name in self.sem_seg_convs[k]:
            x = self.conv(name, x)
            if self.sem_seg_upsample[k]:
                x = self.upsample_by(x, 2)
        if k == 0:
            total = x
        else:
            total = total + x
    logits = self.upsample_by(self.conv("sem_seg_head.predictor", total), self.sem_seg_common_stride)
    cropped = logits[:, :, :image_h, :image_w]
    return torch.upsample_bilinear2d(cropped, [out_h, out_w], False, None, None)[0]

def combine(self, found: Dict[str, Tensor], labels: Tensor) -> Tuple[Tensor, Tensor]:
    # Detectron2's combine_semantic_and_instance_outputs: the instances by decreasing score (a
    # stable order), each placed while its score reaches INSTANCES_CONFIDENCE_THRESH unless more
    # than OVERLAP_THRESH of its mask is taken (then on its free pixels only); then each semantic
    # label but 0 (the "things" class) on the pixels left, when they reach STUFF_AREA_LIMIT.
    ids = torch.zeros_like(labels).int()
    rows: List[List[int]] = []
    next_id = 0
    scores = found["scores"]
    if scores.size(0) > 0:
        masks = found["pred_masks"]
        classes = found["pred_classes"]
        order = torch.argsort(scores.neg(), stable=True)
        for k in range(order.size(0)):
            i = int(order[k].item())
            if float(scores[i].item()) < self.combine_instances_confidence_thresh:
                break
            mask = masks[i]
            mask_area = int(mask.sum().item())
            if mask_area == 0:
                continue
            taken = ids > 0
            intersect_area = int((mask & taken).sum().item())
            if float(intersect_area) / float(mask_area) > self.combine_overlap_thresh:
                continue
            if intersect_area > 0:
                mask = mask & (~taken)
            next_id += 1
            ids.masked_fill_(mask, next_id)
            rows.append([next_id, 1, int(classes[i].item()), i, int(mask.sum().item())])
    present = torch._unique(labels, True, False)[0]
    for k in range(present.size(0)):
        label = int(present[k].item())
        if label == 0:
            continue
        mask = (labels == label) & (ids == 0)
        area = int(mask.sum().item())
        if float(area) < self.combine_stuff_area_limit:
            continue
        next_id += 1
        ids.masked_fill_(mask, next_id)
        rows.append([next_id, 0, label, -1, area])
    segments = torch.zeros([len(rows), 5]).long()
    for r in range(len(rows)):
        for c in range(5):
            segments[r, c] = rows[r][c]
    return ids, segments
