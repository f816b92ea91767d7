#!/usr/bin/env python3
"""compare_runtimes.py DETKIT OPS_LIBRARY SHARED [--fixture NAME] [--images N] [--window A:B]
                      [--size MIN:MAX]

An exported model in the runtimes it is exported for, beside detkit's own inference, on the same
images (the first N of coco_tiny's val2017, default 30, one at a time), with a Detectron2
fixture's model (default the Mask R-CNN one) at its test size or at --size:
  detkit benchmark --task eval: detkit's engine over the mapped images (the C++ loop);
  model.ts from Debian's Python (torch.jit.load, libdetkit_ops.so loaded), on the same mapped
    images (PIL, as Detectron2's test mapper);
  model.onnx in ONNX Runtime (PyPI's onnxruntime, requirements.txt, in this process: CPU
    provider, as tests/export/check_export.py runs it), on the same mapped images.
Images A..B-1 are timed (default 5:N); the first ones warm each runtime up. Every runtime uses all
the machine's cores (its own default). Prints images/s side by side and the ratios to detkit."""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT_TESTS = os.path.join(HERE, "..", "..", "tests", "export")
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "parity"))
sys.path.insert(0, EXPORT_TESTS)
import torch  # noqa: E402

from check_export import run_onnxruntime  # noqa: E402
from oracle_preprocessing import map_image  # noqa: E402


def registered_subset(shared, paths, tmp):
    """coco_tiny's val annotations restricted to `paths`, in their order (detkit benchmark reads
    a dataset)."""
    coco = json.load(open(f"{shared}/data/coco_tiny/annotations/instances_val2017.json"))
    order = {os.path.basename(p): k for k, p in enumerate(paths)}
    coco["images"] = sorted((i for i in coco["images"] if i["file_name"] in order),
                            key=lambda i: order[i["file_name"]])
    ids = {i["id"] for i in coco["images"]}
    coco["annotations"] = [a for a in coco["annotations"] if a["image_id"] in ids]
    with open(f"{tmp}/val.json", "w") as f:
        json.dump(coco, f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("detkit")
    parser.add_argument("ops_library")
    parser.add_argument("shared")
    parser.add_argument("--fixture", default="detectron2")
    parser.add_argument("--images", type=int, default=30)
    parser.add_argument("--window", default=None)
    parser.add_argument("--size", default=None, help="MIN:MAX test size (default the fixture's)")
    args = parser.parse_args()
    try:  # before the minutes of detkit's own run
        import onnxruntime
    except ImportError as e:
        sys.exit(f"the Python package onnxruntime (PyPI; requirements.txt pins it) cannot be "
                 f"imported by {sys.executable}: {e}")
    begin, end = (int(v) for v in (args.window or f"5:{args.images}").split(":"))
    fixture = f"{args.shared}/fixtures/{args.fixture}"
    val = f"{args.shared}/data/coco_tiny/val2017"
    paths = sorted(glob.glob(f"{val}/*.jpg"))[:end]
    overrides = ["MODEL.WEIGHTS", f"{fixture}/weights.pth"]
    if args.size:
        lo, hi = args.size.split(":")
        overrides += ["INPUT.MIN_SIZE_TEST", lo, "INPUT.MAX_SIZE_TEST", hi]
    env = dict(os.environ, DETKIT_DATASETS=os.path.join(tempfile.gettempdir(), "no_datasets"))
    with tempfile.TemporaryDirectory() as tmp:
        registered_subset(args.shared, paths, tmp)
        out = subprocess.run(
            [args.detkit, "benchmark", "--config-file", f"{fixture}/config.yaml", "--task", "eval",
             "--iters", str(end), "--window", f"{begin}:{end}", "--json", *overrides,
             "DATASETS.TEST", "('bench_val',)", "OUTPUT_DIR", tmp], check=True,
            capture_output=True, text=True,
            env=dict(env, DETKIT_DATASETS_REGISTER=f"bench_val={tmp}/val.json:{val}"))
        cli = json.loads(out.stdout)
        for fmt in ("torchscript", "onnx"):
            subprocess.run([args.detkit, "export", "--config-file", f"{fixture}/config.yaml",
                            "--weights", f"{fixture}/weights.pth", "--format", fmt,
                            "--output", f"{tmp}/export", *overrides[2:]],
                           check=True, capture_output=True, env=env)

        torch.ops.load_library(args.ops_library)
        model = torch.jit.load(f"{tmp}/export/model.ts")
        inputs = [map_image(p, model.min_size_test, model.max_size_test, model.input_format)
                  for p in paths]
        torchscript = {}
        # This libtorch starts on one thread (what a plain torch.jit.load user gets); then all.
        for threads in sorted({1, os.cpu_count()}):
            torch.set_num_threads(threads)
            elapsed = 0.0
            with torch.no_grad():
                for k, (image, (h, w)) in enumerate(inputs):
                    start = time.perf_counter()
                    model(image, h, w)
                    if k >= begin:
                        elapsed += time.perf_counter() - start
            torchscript[threads] = (end - begin) / elapsed

        runs = run_onnxruntime(f"{tmp}/export/model.onnx", inputs, verbose=False)
        ms = [ms for _, ms in runs[begin:end]]
        onnx = (end - begin) / (sum(ms) / 1000)

    size = args.size or f"{model.min_size_test}:{model.max_size_test}"
    print(f"{end - begin} images (coco_tiny val2017, {begin}..{end - 1} of the first {end}), "
          f"{args.fixture} fixture model at {size}, one image at a time")
    detkit = cli["images_per_second"]
    print(f"  detkit benchmark --task eval ({cli['num_threads']} threads):   {detkit:.2f} images/s")
    for threads, speed in torchscript.items():
        print(f"  model.ts, Python torch.jit ({threads} threads): {speed:.2f} images/s"
              f" ({speed / detkit:.2f}x detkit's)")
    print(f"  model.onnx, ONNX Runtime {onnxruntime.__version__} (default threads): "
          f"{onnx:.2f} images/s"
          f" ({onnx / detkit:.2f}x detkit's)")


if __name__ == "__main__":
    main()
