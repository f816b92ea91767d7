"""detkit.modeling.build_model: detkit's C++ model as a torch.nn.Module, against Detectron2 itself
(fixtures/detectron2: its Mask R-CNN's weights, mapped inputs, detections, training losses and
gradients). Detectron2's 307-tensor state dict loads strictly (its names are the module's); the
module called on Detectron2's batched inputs gives Detectron2's detections; in training, the
targets built by detkit.data's Python path (load_coco_json, transform_instance_annotations,
annotations_to_instances) are Detectron2's, the five losses Detectron2's and loss.backward()
fills the parameters' .grad with Detectron2's gradients; an optimizer step in Python changes
what the C++ model computes (the parameters are its tensors); BitMasks targets train as
polygons do; model.backbone / proposal_generator / roi_heads, Detectron2's Python modules on the
C++ model's tensors, give Detectron2's FPN features, proposals and detections, and a RetinaNet's
head and forward_inference Detectron2's head outputs and detections; the errors.
Usage: test_model.py SHARED SOURCE DETKIT"""
import json
import os
import sys

import torch

from checks import check, finish, raises
from detkit.config import get_cfg
from detkit.data import detection_utils as utils
from detkit.data import transforms as T
from detkit.data.datasets.coco import load_coco_json
from detkit.modeling import GeneralizedRCNN, build_model
from detkit.structures import BitMasks, Instances

shared, source = sys.argv[1:3]
sys.path.insert(0, f"{source}/tests/tools")
from check_detectron2_user_path import BOX_TOL, SCORE_TOL  # noqa: E402
from detection_sets import Detections, match, summary  # noqa: E402

fixture = f"{shared}/fixtures/detectron2"
if not os.path.exists(f"{fixture}/weights.pth"):
    print(f"skipped: the Detectron2 fixtures are absent ({fixture})")
    sys.exit(77)
cfg = get_cfg()
cfg.merge_from_file(f"{fixture}/config.yaml")
cfg.MODEL.DEVICE = "cpu"
outputs = torch.load(f"{fixture}/outputs.pth")
meta = json.load(open(f"{fixture}/outputs.json"))

model = build_model(cfg)
check(isinstance(model, GeneralizedRCNN) and isinstance(model, torch.nn.Module),
      f"build_model gives a {type(model).__name__} nn.Module")
weights = torch.load(f"{fixture}/weights.pth")
result = model.load_state_dict(weights, strict=True)
check(not result.missing_keys and not result.unexpected_keys and
      sorted(model.state_dict()) == sorted(weights),
      f"Detectron2's {len(weights)}-tensor state dict loads strictly: the same names")

# --- evaluation: Detectron2's detections ---------------------------------------------------------
model.eval()
batch = [{"image": outputs[f"input_tensor_{i}"], "height": meta["images"][i]["height"],
          "width": meta["images"][i]["width"]} for i in range(2)]
with torch.no_grad():
    results = model(batch)
for i, out in enumerate(results):
    inst = out["instances"]
    ours = Detections(inst.pred_boxes.tensor.tolist(), inst.scores.tolist(),
                      inst.pred_classes.tolist())
    reference = Detections(outputs[f"pred_boxes_{i}"].tolist(), outputs[f"scores_{i}"].tolist(),
                           outputs[f"pred_classes_{i}"].tolist())
    _, report = match(ours, reference, BOX_TOL, SCORE_TOL)
    print(f"[ build_model ] image {i} vs Detectron2: {summary(len(ours), len(reference), report)}")
    check(len(ours) == len(reference) and not report["unexplained"] and
          inst.image_size == (meta["images"][i]["height"], meta["images"][i]["width"]),
          f"image {i}: model(batched_inputs) gives Detectron2's {len(reference)} detections")

# --- the parts as Python modules on the C++ tensors: Detectron2's intermediate values ------------
from detkit.modeling import FPN, StandardROIHeads  # noqa: E402
from detkit.modeling.proposal_generator import RPN  # noqa: E402
from detkit.modeling.postprocessing import detector_postprocess  # noqa: E402
from detkit.structures import ImageList  # noqa: E402

check(isinstance(model.backbone, FPN) and isinstance(model.proposal_generator, RPN) and
      isinstance(model.roi_heads, StandardROIHeads),
      f"model.backbone / proposal_generator / roi_heads are Detectron2's Python modules "
      f"({type(model.backbone).__name__}, {type(model.proposal_generator).__name__}, "
      f"{type(model.roi_heads).__name__})")
native_tensors = {name: t for name, t in model._native.named_parameters()}
check(all(model.state_dict(keep_vars=True)[name] is t for name, t in native_tensors.items()),
      f"the parts hold the C++ model's {len(native_tensors)} parameter tensors themselves")
pixel_mean = torch.tensor(cfg.MODEL.PIXEL_MEAN).view(-1, 1, 1)
pixel_std = torch.tensor(cfg.MODEL.PIXEL_STD).view(-1, 1, 1)
images = ImageList.from_tensors([(outputs[f"input_tensor_{i}"] - pixel_mean) / pixel_std
                                 for i in range(2)], model.backbone.size_divisibility)
with torch.no_grad():
    features = model.backbone(images.tensor)
    worst = max(float((features[k] - outputs[f"features_{k}"]).abs().max()) for k in features)
    print(f"[ parts ] backbone: p2..p6 max diff vs Detectron2 {worst:.3g}")
    check(tuple(images.tensor.shape) == tuple(outputs["padded_batch_shape"].tolist()) and
          worst <= 1e-4, f"model.backbone(x): Detectron2's FPN features (max diff {worst:.3g})")
    proposals, _ = model.proposal_generator(images, features)
    for i, props in enumerate(proposals):  # matched as sets: near-tied logits may swap ranks
        ours = Detections(props.proposal_boxes.tensor.tolist(), props.objectness_logits.tolist(),
                          [0] * len(props))
        reference = Detections(outputs[f"proposal_boxes_{i}"].tolist(),
                               outputs[f"proposal_logits_{i}"].tolist(),
                               [0] * len(outputs[f"proposal_boxes_{i}"]))
        _, report = match(ours, reference, BOX_TOL, SCORE_TOL)
        print(f"[ parts ] proposals image {i} vs Detectron2: "
              f"{summary(len(ours), len(reference), report)}")
        check(len(ours) == len(reference) and not report["unexplained"],
              f"model.proposal_generator: image {i}'s {len(reference)} proposals")
    detections, _ = model.roi_heads(images, features, proposals)
for i, det in enumerate(detections):
    det = detector_postprocess(det, meta["images"][i]["height"], meta["images"][i]["width"])
    ours = Detections(det.pred_boxes.tensor.tolist(), det.scores.tolist(),
                      det.pred_classes.tolist())
    reference = Detections(outputs[f"pred_boxes_{i}"].tolist(), outputs[f"scores_{i}"].tolist(),
                           outputs[f"pred_classes_{i}"].tolist())
    _, report = match(ours, reference, BOX_TOL, SCORE_TOL)
    print(f"[ parts ] roi_heads image {i} vs Detectron2: "
          f"{summary(len(ours), len(reference), report)}")
    check(len(ours) == len(reference) and not report["unexplained"] and det.has("pred_masks"),
          f"model.roi_heads(images, features, proposals): image {i}'s {len(reference)} "
          f"detections and masks")

# --- training: targets from detkit.data's Python path, Detectron2's losses and gradients ----------
coco_json = f"{shared}/data/coco_tiny/annotations/instances_val2017.json"
records = {r["image_id"]: r for r in load_coco_json(coco_json, f"{shared}/data/coco_tiny/val2017",
                                                     "model_test_coco_tiny")}
train_batch = []
for i in range(2):
    image = outputs[f"train_input_tensor_{i}"]
    record = records[meta["images"][i]["image_id"]]
    h, w = image.shape[1:]
    tfm = T.TransformList([T.ResizeTransform(record["height"], record["width"], h, w)])
    annos = [utils.transform_instance_annotations(dict(a), tfm, (h, w))
             for a in record["annotations"] if a.get("iscrowd", 0) == 0]
    targets = utils.filter_empty_instances(utils.annotations_to_instances(annos, (h, w)))
    boxes_diff = float((targets.gt_boxes.tensor - outputs[f"train_gt_boxes_{i}"]).abs().max())
    check(torch.equal(targets.gt_classes, outputs[f"train_gt_classes_{i}"]) and boxes_diff < 1e-4,
          f"image {i}: detection_utils' targets are Detectron2's ({len(targets)} instances, "
          f"boxes within {boxes_diff:.2g} px)")
    train_batch.append({"image": image, "instances": targets})
model.train()
model.zero_grad()
losses = model(train_batch)
for name, want in meta["train_losses"].items():
    got = float(losses[name].detach())
    rel = abs(got - want) / abs(want)
    check(rel < 1e-4, f"{name} {got:.6g} vs Detectron2's {want:.6g} (relative diff {rel:.2g})")
check(sorted(losses) == sorted(meta["train_losses"]), f"the loss dict's keys: {sorted(losses)}")
sum(losses.values()).backward()
params = dict(model.named_parameters())
for key, want in outputs.items():
    if not key.startswith("grad."):
        continue
    grad = params[key[5:]].grad
    diff = float((grad - want).abs().max()) if grad is not None else float("inf")
    check(diff < 1e-4 * float(want.abs().max()),
          f"grad {key[5:]}: max abs diff {diff:.3g} (values up to {float(want.abs().max()):.3g})")

# an optimizer step in Python changes the C++ model: the parameters are its tensors
model.eval()
with torch.no_grad():
    first = model(batch[:1])[0]["instances"]  # one image: the batch's padding and GEMMs of one
model.train()
name = "roi_heads.box_predictor.cls_score.weight"
before = params[name].detach().clone()
torch.optim.SGD(model.parameters(), lr=0.01).step()
check(not torch.equal(before, params[name].detach()) and
      torch.equal(model.state_dict()[name], params[name].detach()),
      "SGD's step moved the parameter the state dict (the C++ model's) holds")
model.eval()
with torch.no_grad():
    moved = model(batch[:1])[0]["instances"]
check(len(moved) != len(first) or not torch.equal(moved.scores, first.scores),
      "after the step, the C++ model's detections changed")
model.load_state_dict(weights)
with torch.no_grad():
    again = model(batch[:1])[0]["instances"]
check(len(again) == len(first) and torch.equal(again.scores, first.scores) and
      torch.equal(again.pred_boxes.tensor, first.pred_boxes.tensor),
      "load_state_dict writes into the C++ model: its detections are back")

# .double() / .float() / .to(): the C++ model's own tensors change with the module's
model.double()
native_tensors = model._native.named_parameters() + model._native.named_buffers()
native_dtypes = {t.dtype for _, t in native_tensors if t.is_floating_point()}
model.float()
with torch.no_grad():
    back = model(batch[:1])[0]["instances"]
check(native_dtypes == {torch.float64} and torch.equal(back.scores, first.scores) and
      {t.dtype for _, t in model._native.named_buffers() if t.is_floating_point()} ==
      {torch.float32},
      f".double() reached the C++ model's parameters and buffers ({native_dtypes}); .float() "
      f"brought back the same detections")

# bitmask targets (INPUT.MASK_FORMAT bitmask) train as the same masks given as polygons
model.train()
targets = train_batch[0]["instances"]
h, w = targets.image_size
bitmasks = Instances((h, w), gt_boxes=targets.gt_boxes, gt_classes=targets.gt_classes,
                     gt_masks=BitMasks(torch.stack([torch.from_numpy(utils._bitmask(p, (h, w)))
                                                    for p in targets.gt_masks.polygons])))
torch.manual_seed(0)
with torch.no_grad():
    as_polygons = model(train_batch[:1])
    as_bitmasks = model([{"image": train_batch[0]["image"], "instances": bitmasks}])
diff = abs(float(as_polygons["loss_mask"]) - float(as_bitmasks["loss_mask"]))
check(diff < 0.02 * float(as_polygons["loss_mask"]),
      f"loss_mask from BitMasks {float(as_bitmasks['loss_mask']):.5f} vs polygons "
      f"{float(as_polygons['loss_mask']):.5f} (rasterised, then sampled: held to 2 %)")


def fixture_model(name):
    """Detectron2's fixture `name`: the model built from its config with its weights (eval mode),
    its recorded outputs, and its two input images normalised and batched as an ImageList."""
    fdir = f"{shared}/fixtures/{name}"
    fcfg = get_cfg()
    fcfg.merge_from_file(f"{fdir}/config.yaml")
    fcfg.MODEL.DEVICE = "cpu"
    fout = torch.load(f"{fdir}/outputs.pth")
    fmodel = build_model(fcfg)
    fmodel.load_state_dict(torch.load(f"{fdir}/weights.pth"), strict=True)
    fmodel.eval()
    mean = torch.tensor(fcfg.MODEL.PIXEL_MEAN).view(-1, 1, 1)
    std = torch.tensor(fcfg.MODEL.PIXEL_STD).view(-1, 1, 1)
    fimages = ImageList.from_tensors([(fout[f"input_tensor_{i}"] - mean) / std for i in range(2)],
                                     fmodel.backbone.size_divisibility)
    return fmodel, fout, fimages


# C4, DC5, Cascade and Keypoint R-CNN: the parts (ResNet / FPN, RPN, Res5ROIHeads / StandardROIHeads
# / CascadeROIHeads) on the C++ tensors give Detectron2's detections in input coordinates.
for name in ("detectron2_c4", "detectron2_dc5", "detectron2_cascade", "detectron2_keypoint"):
    fmodel, fout, fimages = fixture_model(name)
    with torch.no_grad():
        ffeatures = fmodel.backbone(fimages.tensor)
        fproposals, _ = fmodel.proposal_generator(fimages, ffeatures)
        fdetections, _ = fmodel.roi_heads(fimages, ffeatures, fproposals)
    parts = ", ".join(type(c).__name__ for c in fmodel.children())
    for i, det in enumerate(fdetections):
        ours = Detections(det.pred_boxes.tensor.tolist(), det.scores.tolist(),
                          det.pred_classes.tolist())
        reference = Detections(fout[f"pred_boxes_input_{i}"].tolist(),
                               fout[f"scores_{i}"].tolist(), fout[f"pred_classes_{i}"].tolist())
        _, report = match(ours, reference, BOX_TOL, SCORE_TOL)
        print(f"[ parts ] {name} ({parts}) image {i}: {summary(len(ours), len(reference), report)}")
        check(len(ours) == len(reference) and not report["unexplained"],
              f"{name}: the Python parts ({parts}) give image {i}'s {len(reference)} detections")

# RetinaNet (fixtures/detectron2_retinanet): model.head and model.forward_inference, Python on the
# C++ model's tensors, give Detectron2's head outputs and detections (input coordinates).
from detkit.modeling import RetinaNet  # noqa: E402
from detkit.modeling.meta_arch.dense_inference import RetinaNetHead  # noqa: E402

retina, retina_out, images = fixture_model("detectron2_retinanet")
check(isinstance(retina, RetinaNet) and isinstance(retina.head, RetinaNetHead) and
      isinstance(retina.backbone, FPN), "RetinaNet: model.head is Detectron2's RetinaNetHead")
with torch.no_grad():
    feats = retina.backbone(images.tensor)
    levels = [feats[f] for f in retina.head_in_features]
    logits, deltas = retina.head(levels)
    for k, name in ((2, "p5"), (4, "p7")):
        d_logit = float((logits[k] - retina_out[f"head_cls_logits_{name}"]).abs().max())
        d_delta = float((deltas[k] - retina_out[f"head_box_deltas_{name}"]).abs().max())
        check(d_logit <= 1e-4 and d_delta <= 1e-4,
              f"RetinaNet model.head: {name} logits max diff {d_logit:.3g}, deltas {d_delta:.3g}")
    found = retina.forward_inference(images, levels, [logits, deltas])
for i, det in enumerate(found):
    ours = Detections(det.pred_boxes.tensor.tolist(), det.scores.tolist(),
                      det.pred_classes.tolist())
    reference = Detections(retina_out[f"pred_boxes_input_{i}"].tolist(),
                           retina_out[f"scores_{i}"].tolist(),
                           retina_out[f"pred_classes_{i}"].tolist())
    _, report = match(ours, reference, BOX_TOL, SCORE_TOL)
    print(f"[ parts ] RetinaNet forward_inference image {i}: "
          f"{summary(len(ours), len(reference), report)}")
    check(len(ours) == len(reference) and not report["unexplained"],
          f"RetinaNet forward_inference: image {i}'s {len(reference)} detections")

# errors
raises(ValueError, lambda: model([{"image": outputs["input_tensor_0"]}]), "no 'instances'")
raises(ValueError, lambda: model([{"file_name": "x.jpg"}]), "batched_inputs[0]")
raises(ValueError, lambda: model({"image": outputs["input_tensor_0"]}), "list of dicts")
finish()
