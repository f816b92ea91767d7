"""check_model_zoo.py DETKIT D2_FIXTURE_DIR COCO_TINY WORKDIR PART (run with a python3 that has torch)

Pretrained weights from URLs, end to end, on 127.0.0.1 only: a local HTTP server stands in for
Detectron2's model zoo (DETKIT_MODEL_ZOO_URL points at it), FVCORE_CACHE at a fresh cache under
WORKDIR. PART picks what is checked, so that each part is its own test with its own time limit:
  download   success, flaky, broken, 404, refused, corrupt, model-zoo, fine-tune (below)
  train      the Mask R-CNN config from a cached R-50.pkl, then offline without one
  retinanet, c4, rpn_fast_rcnn   Detectron2's other configs from the same R-50.pkl (below)
  success    detectron2://zoo/model_final.pkl (a model-zoo .pkl of the Detectron2 fixture's
             weights) is downloaded into FVCORE_CACHE/detectron2/zoo/model_final.pkl and
             `detkit convert-weights ... --config-file fixture` writes a .pth torch.load reads:
             the fixture's keys, every tensor equal (diff 0); a second run makes no request
  flaky      the first transfer breaks half-way: detkit resumes with an HTTP Range request
  broken     every transfer breaks: named error (received N of M bytes, attempts), .part kept
  404        named error: the URL, HTTP status 404, the cache path to place the file at
  refused    named error: cannot connect, the cache path
  corrupt    the file downloads but is no pickle: the error names the cache file and the URL
  model-zoo  `detkit model-zoo url` prints Detectron2's URL for the config, `get` fetches it
             (through the mirror) into the cache and prints the path
  fine-tune  the README's three commands: the model-zoo model on a 3-class COCO-format dataset
  train      configs/COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml with a Caffe2 R-50.pkl
             in the cache trains from it (one step on coco_tiny), as does
             configs/COCO-Detection/retinanet_R_50_FPN_1x.yaml (Detectron2's, its base's anchor
             sizes a !!python/object/apply:eval tag), the C4 Mask R-CNN and the RPN-only
             rpn_R_50_FPN_1x.yaml (box-proposal recall, box_proposals.pkl) and the Fast R-CNN
             fast_rcnn_R_50_FPN_1x.yaml on that RPN's proposal files, each evaluated on
             coco_tiny's val; with an empty
             cache and no server it stops with the message naming the cache path
"""
import http.server
import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
import threading

import numpy as np
import torch

detkit, fixture, coco_tiny, work, part = sys.argv[1:6]
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "parity"))
import oracle_numpy_pickle  # noqa: E402

shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
cache = os.path.join(work, "cache")

weights = torch.load(os.path.join(fixture, "weights.pth"))
zoo_bytes = pickle.dumps({"model": {k: v.numpy() for k, v in weights.items()},
                          "__author__": "Detectron2 Model Zoo"}, protocol=4)
requests = []  # (path, Range header)


class ModelZoo(http.server.BaseHTTPRequestHandler):
    flaky_served = False

    def log_message(self, *args):
        pass

    def do_GET(self):
        requests.append((self.path, self.headers.get("Range")))
        name = self.path.split("/mirror/", 1)[-1]
        if name.endswith("/137260431/model_final_a54504.pkl"):  # mask_rcnn_R_50_FPN_1x's
            name = "zoo/model_final.pkl"
        if name == "corrupt/model_final.pkl":
            return self.send_body(b"\x80\x04this is not a pickle" * 10)
        if name not in ("zoo/model_final.pkl", "flaky/model_final.pkl", "broken/model_final.pkl"):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start = int(self.headers["Range"].split("=")[1].split("-")[0]) if self.headers.get("Range") else 0
        body = zoo_bytes[start:]
        broken = name == "broken/model_final.pkl" or (
            name == "flaky/model_final.pkl" and not ModelZoo.flaky_served)
        if name == "flaky/model_final.pkl":
            ModelZoo.flaky_served = True
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(zoo_bytes) - 1}/{len(zoo_bytes)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2] if broken else body)
        if broken:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)

    def send_body(self, body):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ModelZoo)
threading.Thread(target=server.serve_forever, daemon=True).start()
mirror = f"http://127.0.0.1:{server.server_address[1]}/mirror/"
with socket.socket() as s:  # a port nothing listens on
    s.bind(("127.0.0.1", 0))
    closed_port = s.getsockname()[1]

env = dict(os.environ, FVCORE_CACHE=cache, DETKIT_MODEL_ZOO_URL=mirror, DETKIT_NUM_THREADS="2")
refused_env = dict(env, DETKIT_MODEL_ZOO_URL=f"http://127.0.0.1:{closed_port}/")


def detkit_run(*args, expect_ok=True, environ=env, timeout=600):
    r = subprocess.run([detkit, *args], capture_output=True, text=True, env=environ, timeout=timeout)
    if expect_ok and r.returncode != 0:
        sys.exit(f"detkit {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    if not expect_ok and r.returncode == 0:
        sys.exit(f"detkit {' '.join(args)} succeeded, expected a failure")
    return r


def expect_in(text, *parts):
    for part in parts:
        if part not in text:
            sys.exit(f"'{part}' not in:\n{text[-3000:]}")


config = os.path.join(fixture, "config.yaml")
cached = os.path.join(cache, "detectron2", "zoo", "model_final.pkl")

repo = os.path.join(os.path.dirname(__file__), "..", "..")


def download():
    # success, then the cache alone
    out = os.path.join(work, "converted.pth")
    detkit_run("convert-weights", "detectron2://zoo/model_final.pkl", out, "--config-file", config)
    assert open(cached, "rb").read() == zoo_bytes and not os.path.exists(cached + ".part")
    converted = torch.load(out)
    assert set(converted) == set(weights), set(converted) ^ set(weights)
    diff = max((converted[k].double() - weights[k].double()).abs().max().item() for k in weights)
    key_order = json.load(open(os.path.join(fixture, "outputs.json")))
    order = key_order["state_dict_keys"]
    print(f"success: {len(converted)} tensors, max diff to the fixture {diff}, "
          f"key order {'equal to' if order == list(converted) else 'differs from'} Detectron2's")
    assert diff == 0
    before = len(requests)
    detkit_run("convert-weights", "detectron2://zoo/model_final.pkl", out, "--config-file", config)
    assert len(requests) == before, "the cached file was downloaded again"

    # a transfer that breaks once, resumed
    detkit_run("convert-weights", "detectron2://flaky/model_final.pkl", out, "--config-file", config)
    ranges = [r for p, r in requests if "flaky" in p]
    print(f"flaky: requests {ranges}")
    assert ranges[0] is None and ranges[1] == f"bytes={len(zoo_bytes) // 2}-", ranges
    assert open(os.path.join(cache, "detectron2", "flaky", "model_final.pkl"), "rb").read() == zoo_bytes

    # a transfer that always breaks
    r = detkit_run("convert-weights", "detectron2://broken/model_final.pkl", out, expect_ok=False)
    broken = os.path.join(cache, "detectron2", "broken", "model_final.pkl")
    expect_in(r.stderr, f"cannot download '{mirror}broken/model_final.pkl'", f"of {len(zoo_bytes)} bytes",
              "after 3 attempts", f"place the file at '{broken}' ({len(zoo_bytes)} bytes)")
    assert not os.path.exists(broken) and os.path.exists(broken + ".part")
    print("broken:", r.stderr.strip().splitlines()[-1][:200])

    # 404, refused, corrupt
    r = detkit_run("convert-weights", "detectron2://missing/model.pkl", out, expect_ok=False)
    missing = os.path.join(cache, "detectron2", "missing", "model.pkl")
    expect_in(r.stderr, f"cannot download '{mirror}missing/model.pkl': HTTP status 404",
              f"place the file at '{missing}' (the server announced no size)")
    assert not os.path.exists(missing) and not os.path.exists(missing + ".part")
    r = detkit_run("convert-weights", "detectron2://zoo/other.pkl", out, expect_ok=False,
                   environ=refused_env)
    expect_in(r.stderr, f"cannot download 'http://127.0.0.1:{closed_port}/zoo/other.pkl'",
              "onnect", os.path.join(cache, "detectron2", "zoo", "other.pkl"))
    r = detkit_run("convert-weights", "detectron2://corrupt/model_final.pkl", out, expect_ok=False)
    corrupt = os.path.join(cache, "detectron2", "corrupt", "model_final.pkl")
    expect_in(r.stderr, f"cannot read '{corrupt}'",
              "(downloaded from 'detectron2://corrupt/model_final.pkl'; delete the file")
    print("404, refused, corrupt: named errors")

    # the model zoo's URL for a config
    r = detkit_run("model-zoo", "url", "configs/COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml")
    assert r.stdout.strip() == ("https://dl.fbaipublicfiles.com/detectron2/COCO-InstanceSegmentation/"
                                "mask_rcnn_R_50_FPN_1x/137260431/model_final_a54504.pkl"), r.stdout

    r = detkit_run("model-zoo", "get", "configs/COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml")
    got = os.path.join(cache, "detectron2", "COCO-InstanceSegmentation", "mask_rcnn_R_50_FPN_1x",
                       "137260431", "model_final_a54504.pkl")
    assert r.stdout.strip() == got and open(got, "rb").read() == zoo_bytes, r.stdout
    print("model-zoo url and get: Detectron2's URL, fetched through the mirror into the cache")

    # The README's fine-tuning: a model-zoo model on your own 3-class COCO-format dataset
    coco = json.load(open(os.path.join(coco_tiny, "annotations", "instances_train2017.json")))
    keep = {c["id"] for c in coco["categories"] if c["name"] in ("person", "car", "dog")}
    coco["categories"] = [c for c in coco["categories"] if c["id"] in keep]
    coco["annotations"] = [a for a in coco["annotations"] if a["category_id"] in keep]
    mine = os.path.join(work, "my_train.json")
    json.dump(coco, open(mine, "w"))
    fine_env = dict(env, DETKIT_DATASETS_REGISTER=f"my_train={mine}:{coco_tiny}/train2017")
    r = detkit_run("train", "--config-file", config, "MODEL.WEIGHTS", "detectron2://zoo/model_final.pkl",
                   "MODEL.ROI_HEADS.NUM_CLASSES", "3", "DATASETS.TRAIN", "('my_train',)",
                   "DATASETS.TEST", "()", "SOLVER.MAX_ITER", "2", "SOLVER.IMS_PER_BATCH", "1",
                   "INPUT.MIN_SIZE_TRAIN", "(128,)", "INPUT.MAX_SIZE_TRAIN", "160",
                   "OUTPUT_DIR", os.path.join(work, "finetune"), environ=fine_env)
    expect_in(r.stderr, "Skip loading parameter 'roi_heads.box_predictor.cls_score.weight' to the model "
              "due to incompatible shapes: (81, 256) in the checkpoint but (4, 256) in the model!",
              "iter: 1")
    assert os.path.exists(os.path.join(work, "finetune", "model_final.pth"))
    print("fine-tuning the model-zoo model on 3 classes: only the class-specific rows skipped, trained")


def r50_in_the_cache():
    """Detectron2's Caffe2 R-50.pkl in the cache and coco_tiny as DETKIT_DATASETS/coco: the
    environment the training parts run in (no server: nothing is downloaded)."""
    datasets = os.path.join(work, "datasets")
    os.makedirs(datasets)
    os.symlink(os.path.abspath(coco_tiny), os.path.join(datasets, "coco"))
    r50 = os.path.join(cache, "detectron2", "ImageNetPretrained", "MSRA", "R-50.pkl")
    os.makedirs(os.path.dirname(r50))
    oracle_numpy_pickle.dump_py2(oracle_numpy_pickle.r50_caffe2()[0], r50)
    return r50, dict(refused_env, DETKIT_DATASETS=datasets)


def train():
    """Detectron2's own Mask R-CNN config from a Caffe2 R-50.pkl in the cache; then offline without one."""
    r50, train_env = r50_in_the_cache()
    command = ["train", "--config-file",
               os.path.join(repo, "configs/COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml"),
               "SOLVER.MAX_ITER", "1", "SOLVER.IMS_PER_BATCH", "1", "INPUT.MIN_SIZE_TRAIN", "(128,)",
               "INPUT.MAX_SIZE_TRAIN", "160", "DATASETS.TEST", "()", "DATALOADER.NUM_WORKERS", "1",
               "OUTPUT_DIR", os.path.join(work, "train")]
    r = detkit_run(*command, environ=train_env)
    expect_in(r.stderr, "Renaming Caffe2 weights", "linear.{bias, weight}", "iter: 0")
    assert os.path.exists(os.path.join(work, "train", "model_final.pth"))
    os.remove(r50)
    r = detkit_run(*command, expect_ok=False, environ=train_env)
    expect_in(r.stderr, f"place the file at '{r50}'")
    print("train from the cached R-50.pkl: ok; without it, offline:",
          r.stderr.strip().splitlines()[-1][:160], "...")


def retinanet():
    _, train_env = r50_in_the_cache()
    # Detectron2's own RetinaNet file, whose Base-RetinaNet.yaml gives the anchor sizes as a tagged
    # Python expression: trains a step from the same R-50.pkl and evaluates on coco_tiny's val.
    retina = ["train", "--config-file",
              os.path.join(repo, "configs/COCO-Detection/retinanet_R_50_FPN_1x.yaml"),
              "SOLVER.MAX_ITER", "1", "SOLVER.IMS_PER_BATCH", "1", "INPUT.MIN_SIZE_TRAIN", "(128,)",
              "INPUT.MAX_SIZE_TRAIN", "160", "INPUT.MIN_SIZE_TEST", "128", "INPUT.MAX_SIZE_TEST", "160",
              "DATALOADER.NUM_WORKERS", "1", "OUTPUT_DIR", os.path.join(work, "retinanet")]
    r = detkit_run(*retina, environ=train_env)
    expect_in(r.stderr, "iter: 0", "Evaluation results for bbox:")
    metrics = [json.loads(line) for line in open(os.path.join(work, "retinanet", "metrics.json"))]
    assert any("bbox/AP" in m for m in metrics), metrics[-1]
    print("Detectron2's retinanet_R_50_FPN_1x.yaml (tagged anchor sizes): trained, evaluated")


def c4():
    _, train_env = r50_in_the_cache()
    # A C4 model (Res5ROIHeads): res5 lives in the ROI heads, so the R-50.pkl's res5 weights must
    # reach roi_heads.res5 (Detectron2 matches them by suffix); trained a step, then evaluated.
    command = ["train", "--config-file",
               os.path.join(repo, "configs/COCO-InstanceSegmentation/mask_rcnn_R_50_C4_1x.yaml"),
               "SOLVER.MAX_ITER", "1", "SOLVER.IMS_PER_BATCH", "1", "INPUT.MIN_SIZE_TRAIN", "(128,)",
               "INPUT.MAX_SIZE_TRAIN", "160", "INPUT.MIN_SIZE_TEST", "128", "INPUT.MAX_SIZE_TEST", "160",
               "DATALOADER.NUM_WORKERS", "1", "OUTPUT_DIR", os.path.join(work, "c4"),
               # res5 runs per region (proposals, then detections for the masks): few, for CI's time
               "MODEL.RPN.POST_NMS_TOPK_TEST", "20", "TEST.DETECTIONS_PER_IMAGE", "10"]
    r = detkit_run(*command, environ=train_env)
    expect_in(r.stderr, "iter: 0", "Evaluation results for bbox:", "Evaluation results for segm:")
    missing = r.stderr.split("Some model parameters or buffers are not found in the checkpoint:")[1]
    missing = missing.split("The checkpoint state_dict contains keys")[0]
    assert "res5" not in missing and "roi_heads.box_predictor" in missing, missing
    print("Detectron2's mask_rcnn_R_50_C4_1x.yaml (Res5ROIHeads): res5 loaded from R-50.pkl, trained, evaluated")


def rpn_fast_rcnn():
    _, train_env = r50_in_the_cache()
    # RPN only (ProposalNetwork): a step from R-50.pkl, then evaluated as Detectron2's COCOEvaluator
    # scores proposals (AR@100 ... ARl@1000), the proposals written as its box_proposals.pkl.
    rpn = ["train", "--config-file", os.path.join(repo, "configs/COCO-Detection/rpn_R_50_FPN_1x.yaml"),
           "SOLVER.MAX_ITER", "1", "SOLVER.IMS_PER_BATCH", "1", "SOLVER.BASE_LR", "0.0001",
           "INPUT.MIN_SIZE_TRAIN", "(128,)", "INPUT.MAX_SIZE_TRAIN", "160", "INPUT.MIN_SIZE_TEST",
           "128", "INPUT.MAX_SIZE_TEST", "160", "DATALOADER.NUM_WORKERS", "1",
           "OUTPUT_DIR", os.path.join(work, "rpn")]
    r = detkit_run(*rpn, environ=train_env)
    expect_in(r.stderr, "iter: 0", "Proposal metrics:", "box_proposals.pkl")
    metrics = [json.loads(line) for line in open(os.path.join(work, "rpn", "metrics.json"))]
    assert any("box_proposals/AR@1000" in m for m in metrics), metrics[-1]
    with open(os.path.join(work, "rpn", "inference", "box_proposals.pkl"), "rb") as f:
        written = pickle.load(f)
    val = json.load(open(os.path.join(coco_tiny, "annotations", "instances_val2017.json")))
    assert sorted(written["ids"]) == sorted(i["id"] for i in val["images"]), written["ids"][:5]
    assert all(b.dtype == np.float32 and b.shape[1:] == (4,) for b in written["boxes"])
    print("Detectron2's rpn_R_50_FPN_1x.yaml (ProposalNetwork): trained, evaluated "
          f"(AR@1000 {[m for m in metrics if 'box_proposals/AR@1000' in m][-1]['box_proposals/AR@1000']}),"
          f" box_proposals.pkl of {len(written['ids'])} images read by Python's pickle")
    # Fast R-CNN on precomputed proposals (MODEL.LOAD_PROPOSALS): the RPN just trained writes its
    # proposals for coco_tiny's train and val images, and Detectron2's fast_rcnn_R_50_FPN_1x.yaml
    # trains a step and evaluates on them.
    props = os.path.join(work, "rpn_proposals")
    r = detkit_run("train", "--eval-only", "--config-file",
                   os.path.join(repo, "configs/COCO-Detection/rpn_R_50_FPN_1x.yaml"),
                   "MODEL.WEIGHTS", os.path.join(work, "rpn", "model_final.pth"), "DATASETS.TEST",
                   "('coco_2017_train', 'coco_2017_val')", "INPUT.MIN_SIZE_TEST", "128",
                   "INPUT.MAX_SIZE_TEST", "160", "OUTPUT_DIR", props, environ=train_env)
    fast = ["train", "--config-file", os.path.join(repo, "configs/COCO-Detection/fast_rcnn_R_50_FPN_1x.yaml"),
            "SOLVER.MAX_ITER", "1", "SOLVER.IMS_PER_BATCH", "1", "INPUT.MIN_SIZE_TRAIN", "(128,)",
            "INPUT.MAX_SIZE_TRAIN", "160", "INPUT.MIN_SIZE_TEST", "128", "INPUT.MAX_SIZE_TEST", "160",
            "DATALOADER.NUM_WORKERS", "1", "OUTPUT_DIR", os.path.join(work, "fast_rcnn"),
            "DATASETS.PROPOSAL_FILES_TRAIN", f"('{props}/inference/coco_2017_train/box_proposals.pkl',)",
            "DATASETS.PROPOSAL_FILES_TEST", f"('{props}/inference/coco_2017_val/box_proposals.pkl',)"]
    r = detkit_run(*fast, environ=train_env)
    expect_in(r.stderr, "iter: 0", "loss_cls", "Evaluation results for bbox:")
    assert "loss_rpn_cls" not in r.stderr, "Fast R-CNN on precomputed proposals has no RPN losses"
    print("Detectron2's fast_rcnn_R_50_FPN_1x.yaml (MODEL.LOAD_PROPOSALS): trained and evaluated on "
          "the RPN's box_proposals.pkl files")


PARTS = {"download": download, "train": train, "retinanet": retinanet, "c4": c4,
         "rpn_fast_rcnn": rpn_fast_rcnn}
if part not in PARTS:
    sys.exit(f"unknown part '{part}': one of {', '.join(PARTS)}")
PARTS[part]()
server.shutdown()
