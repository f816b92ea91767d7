#!/usr/bin/env python3
"""detkit.engine.launch as Detectron2's: main_func in 2 worker processes of one job. Each worker
registers a dataset through a Python function and trains the quick demo's model with
DefaultTrainer; the job must train as `detkit train --num-gpus 2` on the same data as a COCO
file (the same losses in metrics.json and the same final weights), each worker knowing its rank
(detkit.utils.comm)
and running on its share of the cores. A worker that raises stops the job and the error names
its process; bad launch options are the CLI's errors. Usage: test_launch.py SHARED SOURCE DETKIT"""
import json
import os
import subprocess
import sys
import time

import torch

import detkit
from detkit.config import get_cfg
from detkit.data import DatasetCatalog, MetadataCatalog
from detkit.engine import DefaultTrainer, launch
from detkit.utils import comm
from small_shapes import shapes_dicts, small_shapes

OVERRIDES = ["SOLVER.MAX_ITER", "6", "SOLVER.IMS_PER_BATCH", "2", "INPUT.MIN_SIZE_TRAIN", "(64,)",
             "INPUT.MAX_SIZE_TRAIN", "96", "DATALOADER.NUM_WORKERS", "1", "SEED", "5",
             "SOLVER.CHECKPOINT_PERIOD", "1000", "DATASETS.TEST", "()", "TEST.EVAL_PERIOD", "0"]


def train_main(source, work, output, fail_rank):
    """What a user's main() does under launch: register, configure, train."""
    if comm.get_rank() == fail_rank:
        raise ValueError(f"rank {fail_rank}'s own error")
    dicts, names = shapes_dicts(work, "train")
    DatasetCatalog.register("launch_shapes", lambda: dicts)
    MetadataCatalog.get("launch_shapes").set(thing_classes=names)
    cfg = get_cfg()
    cfg.merge_from_file(f"{source}/configs/quick/mask_rcnn_R_18_FPN_shapes.yaml")
    cfg.merge_from_list(OVERRIDES)
    cfg.DATASETS.TRAIN = ("launch_shapes",)
    cfg.MODEL.ROI_HEADS.NUM_CLASSES = len(names)
    cfg.OUTPUT_DIR = f"{work}/{output}"
    trainer = DefaultTrainer(cfg)
    trainer.resume_or_load(resume=False)
    trainer.train()
    comm.synchronize()
    with open(f"{work}/{output}/worker_{comm.get_rank()}.json", "w") as f:
        json.dump({"rank": comm.get_rank(), "world": comm.get_world_size(),
                   "local_rank": comm.get_local_rank(), "main": comm.is_main_process(),
                   "threads": torch.get_num_threads()}, f)


def metrics(path):
    return [json.loads(line) for line in open(path)]


if __name__ == "__main__":
    shared, source, detkit_binary = sys.argv[1:4]
    work = small_shapes(detkit_binary, "python_launch", train=8, val=2, seed=5)

    start = time.time()
    launch(train_main, 2, args=(source, work, "launched", None))
    print(f"launch(train_main, 2): {time.time() - start:.1f} s")
    workers = [json.load(open(f"{work}/launched/worker_{r}.json")) for r in (0, 1)]
    print("workers:", workers)
    threads = max(1, os.cpu_count() // 2) if not os.environ.get("DETKIT_NUM_THREADS") \
        else int(os.environ["DETKIT_NUM_THREADS"])
    for r, w in enumerate(workers):
        assert w == {"rank": r, "world": 2, "local_rank": r, "main": r == 0, "threads": threads}, w

    names = shapes_dicts(work, "train")[1]
    subprocess.run([detkit_binary, "train", "--num-gpus", "2", "--config-file",
                    f"{source}/configs/quick/mask_rcnn_R_18_FPN_shapes.yaml", *OVERRIDES,
                    "DATASETS.TRAIN", "('file_shapes',)", "MODEL.ROI_HEADS.NUM_CLASSES",
                    str(len(names)), "OUTPUT_DIR", f"{work}/cli"], check=True,
                   capture_output=True, timeout=600,
                   env=dict(os.environ, DETKIT_DATASETS_REGISTER=(
                       f"file_shapes={work}/shapes/annotations/instances_train.json:"
                       f"{work}/shapes/train")))
    ours, cli = metrics(f"{work}/launched/metrics.json"), metrics(f"{work}/cli/metrics.json")
    assert [m["iteration"] for m in ours] == [m["iteration"] for m in cli], (ours, cli)
    worst = max(abs(a[k] - b[k]) / max(abs(b[k]), 1e-3)
                for a, b in zip(ours, cli) for k in b if k.startswith("loss"))
    print(f"launch vs `detkit train --num-gpus 2`: {len(ours)} metrics.json lines, largest "
          f"relative difference in a loss {worst:.3g}; last total_loss {ours[-1]['total_loss']:.5f}"
          f" vs {cli[-1]['total_loss']:.5f}")
    assert worst < 1e-3, "the launched job trained differently from `detkit train --num-gpus 2`"
    ours, cli = (torch.load(f"{work}/{run}/model_final.pth", map_location="cpu")["model"]
                 for run in ("launched", "cli"))
    assert sorted(ours) == sorted(cli), "the two checkpoints hold different tensors"
    weights = max((ours[k].double() - cli[k].double()).abs().max().item() for k in cli
                  if cli[k].numel())
    print(f"final weights: {len(cli)} tensors, largest difference {weights:.3g}")
    assert weights < 1e-4, "the launched job's weights differ from `detkit train --num-gpus 2`'s"

    # A worker's error stops the job; the error names the process and carries the message.
    start = time.time()
    try:
        launch(train_main, 2, args=(source, work, "failing", 1))
        raise AssertionError("a worker's error did not reach launch's caller")
    except Exception as e:  # torch.multiprocessing.ProcessRaisedException
        message = str(e)
    print(f"a failing worker, {time.time() - start:.1f} s: {message.splitlines()[1:2]} ... "
          f"{message.strip().splitlines()[-1]}")
    assert "Process 1 terminated" in message and "rank 1's own error" in message, message

    # Bad options: the CLI's errors, before any process starts.
    for kwargs, expected in [
            ({"dist_url": "udp://127.0.0.1:1"}, "not a tcp:// address"),
            ({"num_machines": 2, "dist_url": "auto"}, "one machine only"),
            ({"num_machines": 2, "machine_rank": 2, "dist_url": "tcp://127.0.0.1:1"},
             "machine-rank")]:
        try:
            launch(train_main, 2, args=(source, work, "never", None), **kwargs)
            raise AssertionError(f"{kwargs} was accepted")
        except detkit.Error as e:
            print(f"{kwargs}: {e}")
            assert expected in str(e), (kwargs, str(e))

    # One process in all: main_func runs in the caller's process, outside any job.
    ran = []
    launch(lambda: ran.append(comm.get_world_size()), 1)
    assert ran == [1], ran
