"""A model exported by `detkit export --format torchscript`, run where detkit is not: Debian's
Python with torch alone, libdetkit_ops.so its only detkit library. Its detections on real images
(prepared here as Detectron2's test mapper prepares them: PIL, no detkit) must be the ones
`detkit infer` lists for the same images, as matched sets: boxes <= 1e-3 px, scores <= 1e-4,
masks' IoU >= 0.999 (or at most 2 pixels apart),
keypoints <= 0.05 px. Prints the largest differences.

Usage: check_torchscript.py DETKIT OPS_LIBRARY WORK CONFIG WEIGHTS IMAGE... [-- KEY VALUE ...]
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "parity"))
import torch  # noqa: E402

from check_detectron2_user_path import listed_detections  # noqa: E402
from detection_sets import Detections, mask_iou, match, summary  # noqa: E402
from oracle_preprocessing import map_image  # noqa: E402

BOX_TOL, SCORE_TOL, KEYPOINT_TOL, MASK_IOU, MASK_PIXELS = 1e-3, 1e-4, 0.05, 0.999, 2


def run(command):
    print("+", " ".join(command), flush=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(done.stdout[-3000:])
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}")


def exported_detections(out):
    masks = None
    if "pred_masks" in out:  # column-major, as the RLEs decode
        masks = [m.t().reshape(-1) for m in out["pred_masks"]]
    keypoints = out["pred_keypoints"].tolist() if "pred_keypoints" in out else None
    return Detections(out["pred_boxes"].tolist(), out["scores"].tolist(),
                      out["pred_classes"].tolist(), masks, keypoints)


def detkit_libraries():
    with open("/proc/self/maps") as maps:
        return sorted({os.path.basename(line.split()[-1]) for line in maps
                       if "libdetkit" in line})


def main():
    args = sys.argv[1:]
    overrides = []
    if "--" in args:
        overrides = args[args.index("--") + 1:]
        args = args[: args.index("--")]
    detkit, ops_library, work, config, weights, *images = args
    shutil.rmtree(work, ignore_errors=True)
    export_dir, infer_dir = os.path.join(work, "export"), os.path.join(work, "infer")
    run([detkit, "export", "--config-file", config, "--weights", weights, "--format", "torchscript",
         "--output", export_dir, *overrides])
    run([detkit, "infer", "--config-file", config, "--weights", weights, "--input", *images,
         "--output", infer_dir, "--confidence", "0", *overrides])

    torch.ops.load_library(ops_library)
    model = torch.jit.load(os.path.join(export_dir, "model.ts"))
    loaded = detkit_libraries()
    print("detkit libraries in this process:", loaded)
    assert loaded == ["libdetkit_ops.so"], f"expected libdetkit_ops.so alone, got {loaded}"
    failures = []
    for path in images:
        image, (height, width) = map_image(path, model.min_size_test, model.max_size_test,
                                           model.input_format)
        with torch.no_grad():
            out = model(image, height, width)
        ours = exported_detections(out)
        stem = os.path.splitext(os.path.basename(path))[0]
        with open(os.path.join(infer_dir, stem + ".json")) as f:
            reference = listed_detections(json.load(f))
        partner, report = match(ours, reference, BOX_TOL, SCORE_TOL)
        print(f"{stem} ({width}x{height}, input {image.shape[2]}x{image.shape[1]}): "
              f"{summary(len(ours), len(reference), report)}")
        if len(ours) != len(reference) or report["unexplained"]:
            failures.append(f"{stem}: the sets differ")
        if ours.masks is not None:
            # IoU >= 0.999, or at most MASK_PIXELS pixels apart: a probability within float noise
            # of 0.5 (detkit's Winograd convolutions against libtorch's) flips one pixel, which on
            # a small mask is more than 0.1 % of it.
            pairs = [(ours.masks[o], reference.masks[r]) for r, o in enumerate(partner) if o >= 0]
            worst = max((int((a ^ b).sum()) for a, b in pairs), default=0)
            bad = [1 for a, b in pairs if mask_iou(a, b) < MASK_IOU and int((a ^ b).sum()) > MASK_PIXELS]
            print(f"  masks: at most {worst} pixels differ in one; IoU < {MASK_IOU} with more than "
                  f"{MASK_PIXELS} pixels apart: {len(bad)}")
            if bad:
                failures.append(f"{stem}: {len(bad)} masks differ beyond IoU {MASK_IOU}")
        if report.get("keypoint_xy", 0.0) > KEYPOINT_TOL:
            failures.append(f"{stem}: keypoints differ by {report['keypoint_xy']:.3g} px "
                            f"({report['keypoint_tie_jumps']} moved cells)")
    if failures:
        sys.exit("\n".join(failures))
    print("OK: the exported model gives detkit's detections")


if __name__ == "__main__":
    main()
