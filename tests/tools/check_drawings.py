#!/usr/bin/env python3
"""check_drawings.py infer OUTDIR STEM DETECTIONS NAMES -- COMMAND...
   check_drawings.py visualize OUTDIR COUNT -- COMMAND...

Empties OUTDIR, runs COMMAND (a `detkit infer` or `detkit visualize-data` writing into OUTDIR)
and checks what it wrote. infer: OUTDIR/STEM.png is a PNG, OUTDIR/STEM.json lists DETECTIONS
detections of score >= the command's --confidence, each with a category (a dataset name when
NAMES is "names", "class N" when it is "indices"), a class index and an XYWH box. visualize:
exactly train_0000.png ... of COUNT valid PNGs, none smaller than 400 pixels on its short side."""
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


mode = sys.argv[1]
split = sys.argv.index("--")
args, command = sys.argv[2:split], sys.argv[split + 1:]
if mode == "infer":
    check_infer(args[0], args[1], int(args[2]), args[3], command)
elif mode == "visualize":
    check_visualize(args[0], int(args[1]), command)
else:
    sys.exit(f"unknown mode {mode}")
