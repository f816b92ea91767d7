#!/usr/bin/env python3
"""Detectron2's side of bench/compare_torchvision (--detectron2-env): the same train and eval
measurements as `detkit benchmark`, with Detectron2 itself reading the very YAML detkit reads
(configs/Torchvision-Comparisons/*: Detectron2 loads them unchanged), on the shapes dataset
`detkit make-shapes` made, registered with register_coco_instances.

Detectron2 runs from its source tree with Debian's python3 and python3-torch 1.13 (no pip, no
compiled _C: its ROIAlign and NMS are torchvision's), its path set by the environment script
compare_torchvision.py sources first (see docs/BENCHMARKS.md for how one such tree was made).

train: build_model + build_optimizer + build_detection_train_loader (DATALOADER.NUM_WORKERS
workers), the step SimpleTrainer runs (loss dict, sum, zero_grad, backward, step), the LR schedule
of the config. eval: build_detection_test_loader, model(inputs) one image at a time. Prints one
JSON object with the fields `detkit benchmark --json` prints: images_per_second, seconds_per_iter,
data_seconds_per_iter (means over --window) and peak_rss_mb (this process). --device cuda
(cfg.MODEL.DEVICE): the clock read only after torch.cuda.synchronize(), and peak_gpu_mb in the
JSON (torch.cuda.max_memory_allocated over the window's iterations, MiB).
"""
import argparse
import json
import math
import os
import resource
import sys
import time

import torch


def window(args):
    begin, end = (int(v) for v in args.window.split(":"))
    return begin, end


def sync(args):
    """Waits for the GPU's queued work, so that the clock read next covers it."""
    if args.device == "cuda":
        torch.cuda.synchronize()


def gpu_window(args, i):
    """At iteration i's end: the peak GPU memory is counted from the window's first iteration
    (reset when i is the one before it) and read at its last."""
    if args.device != "cuda":
        return
    begin, end = window(args)
    if i == begin - 1:
        torch.cuda.reset_peak_memory_stats()
    if i == end - 1:
        args.peak_gpu_mb = torch.cuda.max_memory_allocated() / 2**20


def setup(args):
    from detectron2.config import get_cfg
    from detectron2.data.datasets import register_coco_instances

    for split in ("train", "val"):
        register_coco_instances(f"shapes_{split}", {},
                                os.path.join(args.dataset_dir, "annotations", f"instances_{split}.json"),
                                os.path.join(args.dataset_dir, split))
    cfg = get_cfg()
    cfg.merge_from_file(args.config_file)
    cfg.merge_from_list(["DATALOADER.NUM_WORKERS", args.workers,
                         "INPUT.MIN_SIZE_TRAIN", (args.min_size,), "INPUT.MAX_SIZE_TRAIN", args.max_size,
                         "INPUT.MIN_SIZE_TEST", args.min_size, "INPUT.MAX_SIZE_TEST", args.max_size,
                         "SOLVER.MAX_ITER", args.iters + 1, "MODEL.DEVICE", args.device])
    cfg.freeze()
    return cfg


def run_train(args, cfg, times, data_times):
    from detectron2.data import build_detection_train_loader
    from detectron2.modeling import build_model
    from detectron2.solver import build_lr_scheduler, build_optimizer

    model = build_model(cfg)
    model.train()
    optimizer = build_optimizer(cfg, model)
    scheduler = build_lr_scheduler(cfg, optimizer)
    batches = iter(build_detection_train_loader(cfg))
    gpu_window(args, -1)
    sync(args)
    last = time.perf_counter()
    for i in range(args.iters):
        start = time.perf_counter()
        data = next(batches)
        fetched = time.perf_counter()
        losses = model(data)
        total = sum(losses.values())
        if not math.isfinite(total.item()):
            sys.exit(f"loss became infinite or NaN at iteration {i}: "
                     f"{ {k: v.item() for k, v in losses.items()} }")
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
        scheduler.step()
        sync(args)
        now = time.perf_counter()
        times.append(now - last)
        data_times.append(fetched - start)
        gpu_window(args, i)
        log(args, i, times)
        last = time.perf_counter()


def run_eval(args, cfg, times, data_times):
    from detectron2.data import build_detection_test_loader
    from detectron2.modeling import build_model

    model = build_model(cfg)
    model.eval()
    loader = build_detection_test_loader(cfg, "shapes_val")
    inputs = iter(loader)
    gpu_window(args, -1)
    with torch.no_grad():
        for i in range(args.iters):
            start = time.perf_counter()
            try:
                data = next(inputs)
            except StopIteration:  # a new pass; starting the loader is not the model's time
                inputs = iter(loader)
                start = time.perf_counter()
                data = next(inputs)
            fetched = time.perf_counter()
            model(data)
            sync(args)
            times.append(time.perf_counter() - start)
            data_times.append(fetched - start)
            gpu_window(args, i)
            log(args, i, times)


def log(args, i, times):
    print(f"detectron2 {args.task} iter {i}: {times[-1]:.3f} s", file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", choices=["train", "eval"], required=True)
    parser.add_argument("--config-file", required=True)
    parser.add_argument("--dataset-dir", required=True)
    parser.add_argument("--iters", type=int, required=True)
    parser.add_argument("--window", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--min-size", type=int, required=True)
    parser.add_argument("--max-size", type=int, required=True)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cfg.MODEL.DEVICE; cuda: synchronised timing, peak_gpu_mb in the JSON")
    parser.add_argument("--flush-denormal", action="store_true",
                        help="torch.set_flush_denormal(True) first (detkit's FLUSH_DENORMAL default; "
                             "PyTorch's is off)")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA device visible")
    args.peak_gpu_mb = 0.0
    if args.flush_denormal and not torch.set_flush_denormal(True):
        sys.exit("--flush-denormal: this CPU has no flush-to-zero mode")
    torch.set_num_threads(args.threads)
    cfg = setup(args)
    from detectron2.utils.events import EventStorage

    times, data_times = [], []
    with EventStorage(0):  # the model records its training statistics there, as under a trainer
        {"train": run_train, "eval": run_eval}[args.task](args, cfg, times, data_times)
    begin, end = window(args)
    seconds = sum(times[begin:end]) / (end - begin)
    images = cfg.SOLVER.IMS_PER_BATCH if args.task == "train" else 1
    extra = {}
    if args.device == "cuda":
        extra = {"peak_gpu_mb": args.peak_gpu_mb, "gpu_name": torch.cuda.get_device_name(0)}
    print(json.dumps({
        "images_per_second": images / seconds,
        "seconds_per_iter": seconds,
        "data_seconds_per_iter": sum(data_times[begin:end]) / (end - begin),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "num_threads": torch.get_num_threads(),
        **extra,
    }))


if __name__ == "__main__":
    main()
