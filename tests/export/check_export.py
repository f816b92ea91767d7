"""A model exported by `detkit export`, run where detkit is not. Its detections on real images
(prepared here as Detectron2's test mapper prepares them: PIL, no detkit) must be the ones
`detkit infer` lists for the same images, as matched sets: boxes <= 1e-3 px, scores <= 1e-4,
masks' IoU >= 0.999 (or at most 2 pixels apart), keypoints <= 0.05 px. Prints the largest
differences.

- torchscript: model.ts in Debian's Python with torch alone, libdetkit_ops.so the only detkit
  library in the process (RUNTIME: that library's path);
- torchscript_cpp: model.ts through torch::jit::load in a C++ program that links libtorch alone
  and dlopens libdetkit_ops.so (RUNTIME: RUNNER::OPS_LIBRARY, the runner run_torchscript.cpp);
- onnx: model.onnx checked by onnx.checker (Debian's python3-onnx), then run by ONNX Runtime
  (onnxruntime-node; RUNTIME: the node_modules folder holding it) through run_onnx.js.

Usage: check_export.py FORMAT DETKIT RUNTIME WORK CONFIG WEIGHTS IMAGE... [-- KEY VALUE ...]
Exits 77 (skipped) when the runtime is absent.
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
from oracle_preprocessing import map_image, read_image  # noqa: E402

BOX_TOL, SCORE_TOL, KEYPOINT_TOL, MASK_IOU, MASK_PIXELS = 1e-3, 1e-4, 0.05, 0.999, 2


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
    torch.ops.load_library(ops_library)
    model = torch.jit.load(os.path.join(export_dir, "model.ts"))
    loaded = detkit_libraries()
    print("detkit libraries in this process:", loaded)
    assert loaded == ["libdetkit_ops.so"], f"expected libdetkit_ops.so alone, got {loaded}"
    outputs = []
    for image, (height, width) in inputs(model.min_size_test, model.max_size_test, model.input_format):
        with torch.no_grad():
            outputs.append(model(image, height, width))
    return outputs


def check_onnx(path):
    import onnx  # Debian's python3-onnx

    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    domains = sorted({n.domain or "ai.onnx" for n in model.graph.node})
    print(f"onnx.checker: valid, opset {model.opset_import[0].version}, "
          f"{len(model.graph.node)} nodes, domains {domains}")
    assert domains == ["ai.onnx"], f"operators outside ONNX's standard domain: {domains}"
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)], model.opset_import
    return {p.key: p.value for p in model.metadata_props}


def write_runner_inputs(items, in_dir):
    """(image uint8 (3, h, w), (height, width)) pairs as the runners read them: <k>.u8 the
    image's bytes, <k>.json its shape and original size."""
    os.makedirs(in_dir)
    for k, (image, size) in enumerate(items):
        with open(os.path.join(in_dir, f"{k:03d}.u8"), "wb") as f:
            f.write(image.contiguous().numpy().tobytes())
        with open(os.path.join(in_dir, f"{k:03d}.json"), "w") as f:
            json.dump({"shape": list(image.shape), "original_size": list(size)}, f)


def run_external(command, settings, inputs, work, env=None):
    """Runs a runner (run_onnx.js, run_torchscript) on the inputs written to files; returns its
    outputs per image."""
    in_dir, out_dir = os.path.join(work, "runner_in"), os.path.join(work, "runner_out")
    items = list(inputs(*settings))
    write_runner_inputs(items, in_dir)
    done = subprocess.run(command + [in_dir, out_dir], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
    print(done.stdout)
    if done.returncode != 0:
        sys.exit(f"the runner failed: {' '.join(command)}")
    dtypes = {"float32": torch.float32, "int64": torch.int64, "bool": torch.bool}
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


def main():
    args = sys.argv[1:]
    overrides = []
    if "--" in args:
        overrides = args[args.index("--") + 1:]
        args = args[: args.index("--")]
    fmt, detkit, runtime, work, config, weights, *images = args
    if not all(os.path.exists(part) for part in runtime.split("::")):
        print(f"SKIPPED: the {fmt} runtime is not at {runtime} (scripts/setup.sh installs it)")
        sys.exit(77)
    shutil.rmtree(work, ignore_errors=True)
    export_dir, infer_dir = os.path.join(work, "export"), os.path.join(work, "infer")
    run([detkit, "export", "--config-file", config, "--weights", weights,
         "--format", "onnx" if fmt == "onnx" else "torchscript",
         "--output", export_dir, *overrides])
    run([detkit, "infer", "--config-file", config, "--weights", weights, "--input", *images,
         "--output", infer_dir, "--confidence", "0", *overrides])

    def inputs(min_size, max_size, image_format):
        for path in images:
            yield map_image(path, min_size, max_size, image_format)

    if fmt == "torchscript":
        outputs = run_torchscript(export_dir, runtime, inputs)
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
        outputs = run_external(["node", os.path.join(HERE, "run_onnx.js"), path], settings, inputs,
                               work, env=dict(os.environ, NODE_PATH=runtime))
    failures = []
    for path, out in zip(images, outputs):
        height, width = read_image(path, "BGR").shape[:2]  # the original, EXIF orientation applied
        ours = exported_detections(out)
        stem = os.path.splitext(os.path.basename(path))[0]
        with open(os.path.join(infer_dir, stem + ".json")) as f:
            reference = listed_detections(json.load(f))
        partner, report = match(ours, reference, BOX_TOL, SCORE_TOL)
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
