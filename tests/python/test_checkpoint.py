"""detkit.checkpoint and detkit.config.compat from Python. A save / resume round trip of a small
module and its optimizer (tensors equal bit for bit, last_checkpoint's text); a Detectron2-style
.pkl of numpy arrays fitted by suffix against a mapping written by hand; a Caffe2 {"blobs"} .pkl
renamed (cls_score's background row moved last, bbox_pred's first 4 rows dropped, _momentum
blobs ignored) against numpy slices; ?matching_heuristics=True on a .pth. Config versions: a
version-0 dict upgraded against the renamed dict written by hand, and back. The errors.
Usage: test_checkpoint.py [SHARED SOURCE DETKIT] (unused)."""
import logging
import os
import pickle
import tempfile

import numpy as np
import torch
from torch import nn

from checks import check, finish, raises
from detkit import Error
from detkit.checkpoint import Checkpointer, DetectionCheckpointer
from detkit.checkpoint.c2_model_loading import (align_and_update_state_dicts,
                                                convert_c2_detectron_names)
from detkit.config import downgrade_config, get_cfg, guess_version, upgrade_config

torch.manual_seed(0)
rng = np.random.default_rng(0)
largest = [0.0]


def same(a, b):
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    if a.shape != b.shape:
        return False
    largest[0] = max(largest[0], (a.double() - b.double()).abs().max().item() if a.numel() else 0)
    return torch.equal(a, b)


def module_with(shapes):
    """An nn.Module whose state_dict has exactly these dotted names and shapes (zeros)."""
    root = nn.Module()
    for name, shape in shapes.items():
        *path, leaf = name.split(".")
        node = root
        for part in path:
            if not hasattr(node, part):
                node.add_module(part, nn.Module())
            node = getattr(node, part)
        node.register_parameter(leaf, nn.Parameter(torch.zeros(shape)))
    return root


class Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


records = Records()
logging.getLogger("detkit.checkpoint").addHandler(records)
logging.getLogger("detkit.checkpoint").setLevel(logging.INFO)

with tempfile.TemporaryDirectory() as d:
    # ---- save / resume round trip
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(torch.randn(5, 3)).sum().backward()
    opt.step()
    out_dir = os.path.join(d, "out")
    ckpt = DetectionCheckpointer(net, out_dir, optimizer=opt)
    check(not ckpt.has_checkpoint() and ckpt.get_checkpoint_file() == "",
          "no checkpoint before the first save")
    ckpt.save("model_0000009", iteration=9)
    with open(os.path.join(out_dir, "last_checkpoint")) as f:
        tag = f.read()
    check(tag == "model_0000009.pth", f"last_checkpoint holds '{tag}'")
    check(ckpt.get_all_checkpoint_files() == [os.path.join(out_dir, "model_0000009.pth")],
          "get_all_checkpoint_files lists the one .pth")
    net2 = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    opt2 = torch.optim.SGD(net2.parameters(), lr=0.1, momentum=0.9)
    ckpt2 = DetectionCheckpointer(nn.DataParallel(net2), out_dir, optimizer=opt2)
    extra = ckpt2.resume_or_load("ignored.pth", resume=True)
    check(extra == {"iteration": 9}, f"resume returns the extra data: {extra}")
    sd, sd2 = net.state_dict(), net2.state_dict()
    check(sd.keys() == sd2.keys() and all(same(sd[k], sd2[k]) for k in sd),
          f"resumed model equals the saved one ({len(sd)} tensors, incl. BN buffers)")
    bufs = [s["momentum_buffer"] for s in opt.state_dict()["state"].values()]
    bufs2 = [s["momentum_buffer"] for s in opt2.state_dict()["state"].values()]
    check(len(bufs) == 6 == len(bufs2) and all(same(a, b) for a, b in zip(bufs, bufs2)),
          f"resumed optimizer's {len(bufs2)} momentum buffers equal the saved ones")
    net3 = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    before = {k: v.clone() for k, v in net3.state_dict().items()}
    check(DetectionCheckpointer(net3, out_dir).resume_or_load("", resume=False) == {} and
          all(same(before[k], v) for k, v in net3.state_dict().items()),
          "resume=False with an empty path loads nothing")
    no_disk = DetectionCheckpointer(net, os.path.join(d, "none"), save_to_disk=False)
    no_disk.save("x")
    check(not os.path.exists(os.path.join(d, "none")), "save_to_disk=False writes nothing")

    # ---- a Detectron2-style .pkl fitted by suffix
    shapes = {"backbone.bottom_up.stem.conv1.weight": (4, 3),
              "backbone.bottom_up.res2.conv1.weight": (4, 4), "head.conv1.weight": (2, 4),
              "head.cls.bias": (2,)}
    file_arrays = {"stem.conv1.weight": (4, 3), "res2.conv1.weight": (4, 4),
                   "conv1.weight": (2, 4), "cls.bias": (5,), "fc.weight": (1,)}
    file_arrays = {k: rng.standard_normal(s).astype(np.float32) for k, s in file_arrays.items()}
    by_hand = {"backbone.bottom_up.stem.conv1.weight": "stem.conv1.weight",
               "backbone.bottom_up.res2.conv1.weight": "res2.conv1.weight",
               "head.conv1.weight": "conv1.weight"}  # cls.bias: other shape, not loaded
    pkl = os.path.join(d, "d2.pkl")
    with open(pkl, "wb") as f:
        pickle.dump({"model": file_arrays, "__author__": "someone", "matching_heuristics": True},
                    f)
    model = module_with(shapes)
    aligned = align_and_update_state_dicts(model.state_dict(), file_arrays, c2_conversion=False)
    check(set(aligned) == set(by_hand) | {"cls.bias", "fc.weight"} and
          all(same(aligned[m], file_arrays[c]) for m, c in by_hand.items()),
          f"align_and_update_state_dicts: the hand mapping, unmatched kept ({sorted(aligned)})")
    records.lines.clear()
    rest = DetectionCheckpointer(model).load(pkl)
    loaded = model.state_dict()
    check(all(same(loaded[m], file_arrays[c]) for m, c in by_hand.items()) and
          same(loaded["head.cls.bias"], torch.zeros(2)),
          "the .pkl's numpy arrays loaded under the hand mapping; the misshapen one not loaded")
    check(rest.get("__author__") == "someone", f"the rest of the file returned: {sorted(rest)}")
    check(any("head.cls.bias" in line for line in records.lines),
          "the unloaded model key is reported missing")
    amb = module_with({"a.conv.weight": (2,), "b.conv.weight": (2,)})
    raises(Error, lambda: align_and_update_state_dicts(
        amb.state_dict(), {"conv.weight": torch.ones(2)}, c2_conversion=False), "conv.weight")

    # ---- a Caffe2 Detectron .pkl
    blobs = {"conv1_w": (4, 3), "res_conv1_bn_s": (4,), "res2_0_branch2a_w": (4, 4),
             "cls_score_w": (3, 2), "bbox_pred_w": (12, 2), "conv1_w_momentum": (4, 3)}
    blobs = {k: rng.standard_normal(s).astype(np.float32) for k, s in blobs.items()}
    renamed, original = convert_c2_detectron_names(
        {k: v for k, v in blobs.items() if not k.endswith("_momentum")})
    names = {"stem.conv1.weight": "conv1_w", "stem.conv1.norm.weight": "res_conv1_bn_s",
             "res2.0.conv1.weight": "res2_0_branch2a_w", "cls_score.weight": "cls_score_w",
             "bbox_pred.weight": "bbox_pred_w"}
    check(original == names, f"convert_c2_detectron_names: names as written by hand {original}")
    model = module_with({
        "backbone.bottom_up.stem.conv1.weight": (4, 3),
        "backbone.bottom_up.stem.conv1.norm.weight": (4,),
        "backbone.bottom_up.res2.0.conv1.weight": (4, 4),
        "roi_heads.box_predictor.cls_score.weight": (3, 2),
        "roi_heads.box_predictor.bbox_pred.weight": (8, 2)})
    c2 = os.path.join(d, "c2.pkl")
    with open(c2, "wb") as f:
        pickle.dump({"blobs": blobs}, f)
    DetectionCheckpointer(model).load(c2)
    got = model.state_dict()
    want = {"backbone.bottom_up.stem.conv1.weight": blobs["conv1_w"],
            "backbone.bottom_up.stem.conv1.norm.weight": blobs["res_conv1_bn_s"],
            "backbone.bottom_up.res2.0.conv1.weight": blobs["res2_0_branch2a_w"],
            "roi_heads.box_predictor.cls_score.weight": blobs["cls_score_w"][[1, 2, 0]],
            "roi_heads.box_predictor.bbox_pred.weight": blobs["bbox_pred_w"][4:]}
    check(all(same(got[k], torch.from_numpy(np.ascontiguousarray(v))) for k, v in want.items()),
          "Caffe2 blobs renamed and fitted: background row last, bbox_pred's first 4 dropped")

    # ---- ?matching_heuristics=True on a .pth
    model = module_with({"backbone.layer.weight": (3,)})
    pth = os.path.join(d, "short.pth")
    torch.save({"model": {"layer.weight": torch.arange(3.0)}}, pth)
    DetectionCheckpointer(model).load(pth)
    check(same(model.backbone.layer.weight, torch.zeros(3)), ".pth without the query: not fitted")
    DetectionCheckpointer(model).load(pth + "?matching_heuristics=True")
    check(same(model.backbone.layer.weight, torch.arange(3.0)), ".pth with the query: fitted")

    # ---- errors
    missing = os.path.join(d, "nope.pth")
    raises(FileNotFoundError, lambda: DetectionCheckpointer(model).load(missing), missing)
    raises(ValueError, lambda: DetectionCheckpointer(model).load(pth + "?colour=red"), "colour")
    bad = os.path.join(d, "bad.pth")
    torch.save({"model": {"backbone.layer.weight": [1, 2, 3]}}, bad)
    raises(ValueError, lambda: DetectionCheckpointer(model).load(bad), "backbone.layer.weight")
    wrong = os.path.join(d, "wrong.pth")
    torch.save({"model": {"backbone.layer.weight": torch.ones(4)}}, wrong)
    records.lines.clear()
    DetectionCheckpointer(model).load(wrong)
    check(any("backbone.layer.weight" in line and "(4,)" in line and "(3,)" in line
              for line in records.lines) and same(model.backbone.layer.weight, torch.arange(3.0)),
          "a shape mismatch is skipped and named with both shapes")
    raises(TypeError, lambda: Checkpointer("model"), "nn.Module")
    raises(KeyError, lambda: Checkpointer(model, optimizer=opt).add_checkpointable("optimizer",
                                                                                  opt), "optimizer")
    raises(KeyError, lambda: Checkpointer(model).load(pth, checkpointables=["optimizer"]),
           "optimizer")

# ---- config versions
v0 = {"MODEL": {"WEIGHT": "w.pkl", "RPN_HEAD": {"NAME": "Head"}, "RPN": {"ANCHOR_SIZES": [[8]]},
                "ROI_HEADS": {"NMS": 0.4}},
      "TEST": {"AUG_ON": True, "DETECTIONS_PER_IMG": 50}, "VERSION": 0}
v2_by_hand = {"MODEL": {"WEIGHTS": "w.pkl", "RPN": {"HEAD_NAME": "Head"},
                        "ANCHOR_GENERATOR": {"SIZES": [[8]]},
                        "ROI_HEADS": {"NMS_THRESH_TEST": 0.4}},
              "TEST": {"AUG": {"ENABLED": True}, "DETECTIONS_PER_IMAGE": 50}, "VERSION": 2}
up = upgrade_config(v0)
check(up == v2_by_hand, f"version-0 dict upgraded: {up}")
check(v0["VERSION"] == 0 and "WEIGHT" in v0["MODEL"], "upgrade_config leaves its argument")
down = downgrade_config(up, 0)
v0_back = dict(v0, MODEL=dict(v0["MODEL"], RETINANET={"ANCHOR_SIZES": [[8]],
                                                      "ANCHOR_STRIDES": []}))
check(down == v0_back, f"downgraded back (RetinaNet gets RPN's anchors, as Detectron2): {down}")
check(upgrade_config(down) == v2_by_hand, "down then up: the same dict")
retina = upgrade_config({"MODEL": {"META_ARCHITECTURE": "RetinaNet",
                                   "RETINANET": {"ANCHOR_SIZES": [[4]]},
                                   "RPN": {"ANCHOR_SIZES": [[8]]}}, "VERSION": 1})
check(retina["MODEL"] == {"META_ARCHITECTURE": "RetinaNet", "ANCHOR_GENERATOR": {"SIZES": [[4]]}},
      f"RetinaNet keeps RETINANET's anchors: {retina}")
cfg = get_cfg()
check(upgrade_config(cfg) == cfg and downgrade_config(cfg, cfg.VERSION) == cfg,
      "a CfgNode at the latest version: unchanged")
cfg.VERSION = 1
check(upgrade_config(cfg).VERSION == 2 and cfg.VERSION == 1, "a CfgNode's VERSION upgraded")
raises(Error, lambda: downgrade_config(get_cfg(), 1), "MODEL.WEIGHT")
raises(Error, lambda: upgrade_config(v2_by_hand, 1), "v2 to v1")
raises(Error, lambda: upgrade_config({"MODEL": {}}), "VERSION")
check(guess_version({"MODEL": {"WEIGHT": "x"}}, "a.yaml") == 1 and
      guess_version({"TEST": {"AUG_ON": True}}, "b.yaml") == 1 and
      guess_version(get_cfg(), "c.yaml") == 2, "guess_version: 1 for MODEL.WEIGHT / TEST.AUG_ON")
print(f"largest difference seen between compared tensors: {largest[0]}")
finish()
