"""A model exported by `detkit export`, run where detkit is not. Its detections on real images
(prepared here as Detectron2's test mapper prepares them: PIL, no detkit) must be the ones
`detkit infer` lists for the same images, as matched sets: boxes <= 1e-3 px, scores <= 1e-4,
masks' IoU >= 0.999 (or at most 2 pixels apart), keypoints <= 0.05 px. Prints the largest
differences.

- torchscript: model.ts in Debian's Python with torch alone, libdetkit_ops.so the only detkit
  library in the process (RUNTIME: that library's path);
- torchscript_cpp: model.ts through torch::jit::load in a C++ program that links libtorch alone
  and dlopens libdetkit_ops.so (RUNTIME: RUNNER::OPS_LIBRARY, the runner run_torchscript.cpp);
- onnx: model.onnx checked by onnx.checker (the onnx package), then run by ONNX Runtime (PyPI's
  onnxruntime, in this process: its CPU provider, its default intra-op threads; RUNTIME: the word
  `onnxruntime`, there being no path to give). Both packages are pinned in requirements.txt.

Segmentation models (SemanticSegmentor, PanopticFPN; `--eager RUN_EAGER` first): the reference
is detkit's eager model run by run_eager.cpp on the very inputs the exported model gets, compared
output by output: `sem_seg` logits by their largest difference (and the argmax pixels that
moved), `panoptic_seg` segment by segment (things paired through their matched instances, stuff
by class; the pixels on which each pair differs counted), the instances as above.

Usage: check_export.py [--eager RUN_EAGER] FORMAT DETKIT RUNTIME WORK CONFIG WEIGHTS IMAGE...
       [-- KEY VALUE ...]
Exits 77 (skipped) when the runtime is absent (for onnx: when this Python cannot import
onnxruntime).
"""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "parity"))
import numpy  # noqa: E402
import torch  # noqa: E402

from check_detectron2_user_path import listed_detections  # noqa: E402
from detection_sets import Detections, mask_iou, match, summary  # noqa: E402
from oracle_preprocessing import map_image, read_image  # noqa: E402

BOX_TOL, SCORE_TOL, KEYPOINT_TOL, MASK_IOU, MASK_PIXELS = 1e-3, 1e-4, 0.05, 0.999, 2
# The exported graph runs libtorch's kernels where `detkit infer` runs detkit's (and on another
# CPU, other MKL / oneDNN code paths): deltas differing by float noise (1e-4 at most, the score
# tolerance) move a box by that times its size over the box transform's weights (5 for width
# and height), so a box may differ by 2e-5 of its larger side beyond BOX_TOL. A CI machine saw
# 1/100 boxes of one image past 1e-3 px alone (stop 57).
BOX_REL_TOL = 2e-5


TIMEOUT_S = 240  # each child process; ctest's own limit for the test is 300 s


def run(command):
    print("+", " ".join(command), flush=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=TIMEOUT_S)
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


def run_torchscript(export_dir, ops_library, inputs):
    """The outputs per image, and the model's (min_size_test, max_size_test, input_format)."""
    torch.ops.load_library(ops_library)
    model = torch.jit.load(os.path.join(export_dir, "model.ts"))
    loaded = detkit_libraries()
    print("detkit libraries in this process:", loaded)
    assert loaded == ["libdetkit_ops.so"], f"expected libdetkit_ops.so alone, got {loaded}"
    settings = (model.min_size_test, model.max_size_test, model.input_format)
    outputs = []
    for image, (height, width) in inputs(*settings):
        with torch.no_grad():
            outputs.append(model(image, height, width))
    return outputs, settings


def check_onnx(path):
    import onnx  # PyPI's onnx (requirements.txt)

    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    domains = sorted({n.domain or "ai.onnx" for n in model.graph.node})
    print(f"onnx.checker: valid, opset {model.opset_import[0].version}, "
          f"{len(model.graph.node)} nodes, domains {domains}")
    assert domains == ["ai.onnx"], f"operators outside ONNX's standard domain: {domains}"
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)], model.opset_import
    return {p.key: p.value for p in model.metadata_props}


def import_onnxruntime_or_skip():
    """PyPI's onnxruntime, or exit 77 (skipped) saying why."""
    try:
        import onnxruntime
    except ImportError as e:
        print(f"SKIPPED: the onnx runtime, the Python package onnxruntime (PyPI; requirements.txt "
              f"pins it), cannot be imported by {sys.executable}: {e}")
        sys.exit(77)
    return onnxruntime


def run_onnxruntime(path, items, verbose=True):
    """Runs model.onnx in ONNX Runtime (PyPI's onnxruntime, in this process; CPU provider,
    intra-op threads 0: its default) on (image uint8 (3, h, w), (height, width)) pairs, fed as
    `image` (uint8, C x H x W) and `original_size` (int64 [2]). Returns, per image, its outputs
    by name (torch tensors) and the run's milliseconds (session.run alone)."""
    onnxruntime = import_onnxruntime_or_skip()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 0
    session = onnxruntime.InferenceSession(path, sess_options=options,
                                           providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    results = []
    for k, (image, size) in enumerate(items):
        assert image.dtype == torch.uint8 and image.dim() == 3, (image.dtype, image.shape)
        feeds = {"image": image.contiguous().numpy(),
                 "original_size": numpy.asarray(list(size), dtype=numpy.int64)}
        start = time.perf_counter()
        arrays = session.run(names, feeds)
        ms = (time.perf_counter() - start) * 1e3
        out = {name: torch.from_numpy(numpy.ascontiguousarray(a)) for name, a in zip(names, arrays)}
        if verbose:
            count = out["scores"].shape[0] if "scores" in out else "?"
            print(f"{k:03d}: {count} detections in {ms:.0f} ms", flush=True)
        results.append((out, ms))
    return results


def write_runner_inputs(items, in_dir):
    """(image uint8 (3, h, w), (height, width)) pairs as the runners read them: <k>.u8 the
    image's bytes, <k>.json its shape and original size."""
    os.makedirs(in_dir)
    for k, (image, size) in enumerate(items):
        with open(os.path.join(in_dir, f"{k:03d}.u8"), "wb") as f:
            f.write(image.contiguous().numpy().tobytes())
        with open(os.path.join(in_dir, f"{k:03d}.json"), "w") as f:
            json.dump({"shape": list(image.shape), "original_size": list(size)}, f)


def run_external(command, settings, inputs, work, name="runner"):
    """Runs an external runner (run_torchscript, run_eager) on the inputs written to files;
    returns its outputs per image."""
    in_dir, out_dir = os.path.join(work, name + "_in"), os.path.join(work, name + "_out")
    items = list(inputs(*settings))
    write_runner_inputs(items, in_dir)
    done = subprocess.run(command + [in_dir, out_dir], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
    print(done.stdout)
    if done.returncode != 0:
        sys.exit(f"the runner failed: {' '.join(command)}")
    dtypes = {"float32": torch.float32, "int64": torch.int64, "int32": torch.int32,
              "bool": torch.bool}
    outputs = []
    for k in range(len(items)):
        with open(os.path.join(out_dir, f"{k:03d}.json")) as f:
            listing = json.load(f)
        out = {}
        for name, spec in listing.items():
            if name == "milliseconds":
                continue
            with open(os.path.join(out_dir, f"{k:03d}.{name}.bin"), "rb") as f:
                raw = bytearray(f.read())
            dtype = dtypes[spec["type"]]
            out[name] = (torch.frombuffer(raw, dtype=dtype).reshape(spec["dims"]) if raw
                         else torch.zeros(spec["dims"], dtype=dtype))
        outputs.append(out)
    return outputs


SEM_SEG_TOL = 1e-3  # logits: float noise of other convolution kernels (measured: DEPLOY.md)


def compare_segmentation(stem, ours, reference):
    """The exported model's sem_seg / panoptic_seg / instances against the eager model's (dicts of
    tensors, as run_eager writes them). Prints the differences; returns failure lines."""
    failures = []
    partner = None
    if "scores" in reference:
        mine, theirs = exported_detections(ours), exported_detections(reference)
        partner, report = match(mine, theirs, BOX_TOL, SCORE_TOL, BOX_REL_TOL)
        print(f"  instances: {summary(len(mine), len(theirs), report)}")
        if len(mine) != len(theirs) or report["unexplained"]:
            failures.append(f"{stem}: the instances differ")
        if theirs.masks is not None:
            pairs = [(mine.masks[o], theirs.masks[r]) for r, o in enumerate(partner) if o >= 0]
            worst = max((int((a ^ b).sum()) for a, b in pairs), default=0)
            bad = sum(1 for a, b in pairs if mask_iou(a, b) < MASK_IOU and int((a ^ b).sum()) > MASK_PIXELS)
            print(f"  masks: at most {worst} pixels differ in one; beyond IoU {MASK_IOU} and "
                  f"{MASK_PIXELS} pixels: {bad}")
            if bad:
                failures.append(f"{stem}: {bad} masks differ")
    if "sem_seg" in reference:
        a, b = ours["sem_seg"], reference["sem_seg"]
        if a.shape != b.shape:
            return failures + [f"{stem}: sem_seg is {tuple(a.shape)}, the eager model's {tuple(b.shape)}"]
        diff = float((a - b).abs().max()) if a.numel() else 0.0
        moved = int((a.argmax(0) != b.argmax(0)).sum())
        print(f"  sem_seg {tuple(b.shape)}: logits max abs diff {diff:.3g} (values up to "
              f"{float(b.abs().max()):.3g}); argmax differs on {moved} of {b[0].numel()} pixels")
        if diff > SEM_SEG_TOL:
            failures.append(f"{stem}: sem_seg logits differ by {diff:.3g} > {SEM_SEG_TOL}")
    if "panoptic_seg" in reference:
        failures += compare_panoptic(stem, ours, reference, partner)
    return failures


def compare_panoptic(stem, ours, reference, partner):
    """Segment by segment: things paired through the instances' matching (instance_id), stuff by
    class; each pair's pixels compared (as masks: IoU >= MASK_IOU or at most MASK_PIXELS apart)."""
    failures = []
    a_ids, b_ids = ours["panoptic_seg"], reference["panoptic_seg"]
    if a_ids.shape != b_ids.shape or a_ids.dtype != b_ids.dtype:
        return [f"{stem}: panoptic_seg is {tuple(a_ids.shape)} {a_ids.dtype}, the eager model's "
                f"{tuple(b_ids.shape)} {b_ids.dtype}"]
    a_rows, b_rows = ours["segments_info"].tolist(), reference["segments_info"].tolist()
    instance_partner = {r: o for r, o in enumerate(partner or [])}
    by_key = {}
    for row in a_rows:
        by_key[("thing", row[3]) if row[1] else ("stuff", row[2])] = row
    worst, total, bad, unmatched = 0, 0, 0, 0
    for row in b_rows:
        seg_id, isthing, category, instance, area = row
        key = ("thing", instance_partner.get(instance, -1)) if isthing else ("stuff", category)
        other = by_key.pop(key, None)
        if other is None or other[2] != category:
            unmatched += 1
            print(f"  reference segment {row} has no partner")
            continue
        if other[4] != int((a_ids == other[0]).sum()) or area != int((b_ids == seg_id).sum()):
            failures.append(f"{stem}: segments_info's area disagrees with the id map")
        apart = int(((a_ids == other[0]) ^ (b_ids == seg_id)).sum())
        united = int(((a_ids == other[0]) | (b_ids == seg_id)).sum())
        worst, total = max(worst, apart), total + apart
        if apart > MASK_PIXELS and 1.0 - apart / max(united, 1) < MASK_IOU:
            bad += 1
            print(f"  segment {row} vs ours {other}: {apart} pixels differ of {united}")
    void = int(((a_ids == 0) ^ (b_ids == 0)).sum())
    things = sum(1 for r in b_rows if r[1])
    print(f"  panoptic_seg: {len(b_rows)} segments ({things} things), {len(a_rows)} ours; "
          f"pixels differing per segment at most {worst}, {total} in all, void {void}; beyond IoU "
          f"{MASK_IOU} and {MASK_PIXELS} pixels: {bad}; unpaired: {unmatched} + {len(by_key)} ours")
    if len(a_rows) != len(b_rows) or unmatched or by_key or bad:
        failures.append(f"{stem}: the panoptic segments differ")
    return failures


def main():
    args = sys.argv[1:]
    eager = None
    if args[:1] == ["--eager"]:
        eager, args = args[1], args[2:]
    overrides = []
    if "--" in args:
        overrides = args[args.index("--") + 1:]
        args = args[: args.index("--")]
    fmt, detkit, runtime, work, config, weights, *images = args
    if fmt == "onnx":
        if runtime != "onnxruntime":
            sys.exit(f"RUNTIME for onnx is the word 'onnxruntime' (PyPI's, in this process), "
                     f"not {runtime!r}")
        import_onnxruntime_or_skip()
    elif not all(os.path.exists(part) for part in runtime.split("::")):
        print(f"SKIPPED: the {fmt} runtime is not at {runtime} (scripts/setup.sh installs it)")
        sys.exit(77)
    shutil.rmtree(work, ignore_errors=True)
    export_dir, infer_dir = os.path.join(work, "export"), os.path.join(work, "infer")
    run([detkit, "export", "--config-file", config, "--weights", weights,
         "--format", "onnx" if fmt == "onnx" else "torchscript",
         "--output", export_dir, *overrides])
    if eager is None:
        run([detkit, "infer", "--config-file", config, "--weights", weights, "--input", *images,
             "--output", infer_dir, "--confidence", "0", *overrides])

    def inputs(min_size, max_size, image_format):
        for path in images:
            yield map_image(path, min_size, max_size, image_format)

    if fmt == "torchscript":
        outputs, settings = run_torchscript(export_dir, runtime, inputs)
    elif fmt == "torchscript_cpp":  # RUNTIME: run_torchscript::libdetkit_ops.so
        runner, ops_library = runtime.split("::")
        torch.ops.load_library(ops_library)  # here, to read the model's settings only
        model = torch.jit.load(os.path.join(export_dir, "model.ts"))
        settings = (model.min_size_test, model.max_size_test, model.input_format)
        outputs = run_external([runner, os.path.join(export_dir, "model.ts"), ops_library],
                               settings, inputs, work)
    else:
        path = os.path.join(export_dir, "model.onnx")
        meta = check_onnx(path)
        settings = (int(meta["min_size_test"]), int(meta["max_size_test"]), meta["input_format"])
        outputs = [out for out, _ in run_onnxruntime(path, inputs(*settings))]
    if eager is not None:
        references = run_external([eager, config, weights, *overrides], settings, inputs, work, "eager")
        failures = []
        for path, out, reference in zip(images, outputs, references):
            stem = os.path.splitext(os.path.basename(path))[0]
            print(f"{stem}: outputs {sorted(out)}")
            if sorted(out) != sorted(reference):
                failures.append(f"{stem}: outputs {sorted(out)}, the eager model's {sorted(reference)}")
                continue
            failures += compare_segmentation(stem, out, reference)
        if failures:
            sys.exit("\n".join(failures))
        print(f"OK: the exported {fmt} model gives the eager model's outputs")
        return
    failures = []
    for path, out in zip(images, outputs):
        height, width = read_image(path, "BGR").shape[:2]  # the original, EXIF orientation applied
        ours = exported_detections(out)
        stem = os.path.splitext(os.path.basename(path))[0]
        with open(os.path.join(infer_dir, stem + ".json")) as f:
            reference = listed_detections(json.load(f))
        partner, report = match(ours, reference, BOX_TOL, SCORE_TOL, BOX_REL_TOL)
        print(f"{stem} ({width}x{height}): {summary(len(ours), len(reference), report)}")
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
    print(f"OK: the exported {fmt} model gives detkit's detections")


if __name__ == "__main__":
    main()
