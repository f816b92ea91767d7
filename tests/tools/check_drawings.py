#!/usr/bin/env python3
"""check_drawings.py infer OUTDIR STEM DETECTIONS NAMES -- COMMAND...
   check_drawings.py visualize OUTDIR COUNT -- COMMAND...
   check_drawings.py panoptic OUTDIR STEM OUTPUTS_JSON -- COMMAND...
   check_drawings.py sem_seg OUTDIR STEM OUTPUTS_JSON -- COMMAND...

Empties OUTDIR, runs COMMAND (a `detkit infer` or `detkit visualize-data` writing into OUTDIR)
and checks what it wrote. infer: OUTDIR/STEM.png is a PNG, OUTDIR/STEM.json lists DETECTIONS
detections of score >= the command's --confidence, each with a category (a dataset name when
NAMES is "names", "class N" when it is "indices"), a class index and an XYWH box. visualize:
exactly train_0000.png ... of COUNT valid PNGs, none smaller than 400 pixels on its short side.
panoptic: OUTDIR/STEM.json lists the segments Detectron2 gave for the image (the first of
OUTPUTS_JSON's images: segments_info's ids, isthing and category ids, scores to 1e-4, areas
panoptic_segment_areas within 1 %). sem_seg: it lists each class of the argmax of the semantic
logits with its area (Detectron2's sem_seg_argmax_area within 1 % of the image)."""
import json
import os
import shutil
import struct
import subprocess
import sys


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def run(outdir, command):
    shutil.rmtree(outdir, ignore_errors=True)
    subprocess.run(command, check=True)


def check_infer(outdir, stem, expected, names, command):
    confidence = float(command[command.index("--confidence") + 1])
    run(outdir, command)
    width, height = png_size(os.path.join(outdir, stem + ".png"))
    print(f"{stem}.png: {width}x{height}")
    detections = json.load(open(os.path.join(outdir, stem + ".json")))
    print(f"{stem}.json: {len(detections)} detections (expected {expected})")
    assert len(detections) == expected
    for d in detections:
        assert d["score"] >= confidence, d
        assert len(d["bbox"]) == 4 and d["bbox"][2] >= 0 and d["bbox"][3] >= 0, d
        assert isinstance(d["class"], int), d
        if names == "names":
            assert not d["category"].startswith("class ") and "category_id" in d, d
        else:
            assert d["category"] == f"class {d['class']}" and "category_id" not in d, d


def check_visualize(outdir, count, command):
    run(outdir, command)
    files = sorted(os.listdir(outdir))
    assert files == [f"train_{k:04d}.png" for k in range(count)], files
    for name in files:
        width, height = png_size(os.path.join(outdir, name))
        print(f"{name}: {width}x{height}")
        assert min(width, height) >= 400


def near(a, b, tolerance):
    return abs(a - b) <= tolerance


def check_panoptic(outdir, stem, outputs_json, command):
    run(outdir, command)
    width, height = png_size(os.path.join(outdir, stem + ".png"))
    print(f"{stem}.png: {width}x{height}")
    expected = json.load(open(outputs_json))["images"][0]
    segments = json.load(open(os.path.join(outdir, stem + ".json")))
    print(f"{stem}.json:", *segments, sep="\n  ")
    want = expected["segments_info"]
    assert len(segments) == len(want), f"{len(segments)} segments, Detectron2 gives {len(want)}"
    for got, ref, area in zip(segments, want, expected["panoptic_segment_areas"]):
        for key in ("id", "isthing", "category_id"):
            assert got[key] == ref[key], (key, got, ref)
        assert near(got["area"], area, 0.01 * area), (got, area)
        assert got["category"], got
        if ref["isthing"]:
            assert near(got["score"], ref["score"], 1e-4) and got["instance_id"] == ref["instance_id"], (got, ref)


def check_sem_seg(outdir, stem, outputs_json, command):
    run(outdir, command)
    width, height = png_size(os.path.join(outdir, stem + ".png"))
    print(f"{stem}.png: {width}x{height}")
    expected = json.load(open(outputs_json))["images"][0]
    classes = json.load(open(os.path.join(outdir, stem + ".json")))
    print(f"{stem}.json:", *classes, sep="\n  ")
    want = {c: a for c, a in enumerate(expected["sem_seg_argmax_area"]) if a > 0}
    assert [c["class"] for c in classes] == sorted(want), (classes, want)
    total = expected["height"] * expected["width"]
    assert sum(c["area"] for c in classes) == total, classes
    for c in classes:
        assert near(c["area"], want[c["class"]], 0.01 * total) and c["category"], (c, want)


mode = sys.argv[1]
split = sys.argv.index("--")
args, command = sys.argv[2:split], sys.argv[split + 1:]
if mode == "infer":
    check_infer(args[0], args[1], int(args[2]), args[3], command)
elif mode == "visualize":
    check_visualize(args[0], int(args[1]), command)
elif mode in ("panoptic", "sem_seg"):
    check = check_panoptic if mode == "panoptic" else check_sem_seg
    check(args[0], args[1], args[2], command)
else:
    sys.exit(f"unknown mode {mode}")
