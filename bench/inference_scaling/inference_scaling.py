#!/usr/bin/env python3
"""Inference images/s over a dataset on this machine as 1 process x T threads and as P processes
x T/P threads (`detkit train --eval-only --num-gpus P`: each rank infers its contiguous shard,
detections are gathered to rank 0), alternating which runs first every round. The rate of a run
is the sum over its ranks of (images after warm-up / inference seconds), from each rank's
"Total inference time" log line; the ranks run at the same time.

    .venv/bin/python bench/inference_scaling/inference_scaling.py [--rounds 2] [--images 32]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CONFIG = "configs/Torchvision-Comparisons/mask_rcnn_R_50_FPN_torchvision.yaml"
TOTAL = re.compile(r"Total inference time: ([0-9.]+) s \(([0-9.]+) s / img, (\d+) images after")


def run(args, processes, out):
    """One eval-only run; returns (images/s, per-rank lines)."""
    threads = args.threads // processes
    command = [args.detkit, "--num-threads", str(threads), "train", "--eval-only",
               "--config-file", os.path.join(REPO, CONFIG), "OUTPUT_DIR", out,
               "DATASETS.TEST", "('shapes_val',)", "DATALOADER.NUM_WORKERS", "1"]
    if processes > 1:
        command[4:4] = ["--num-gpus", str(processes)]
    env = dict(os.environ, DETKIT_DATASETS=args.work_dir)
    print(f"  {processes} x {threads}: {' '.join(command)}", file=sys.stderr, flush=True)
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{processes} process(es) failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    rate, lines = 0.0, []
    for rank in range(processes):
        log = os.path.join(out, "log.txt" + ("" if rank == 0 else f".rank{rank}"))
        found = TOTAL.search(open(log).read())
        if not found:
            sys.exit(f"no 'Total inference time' line in {log}")
        seconds, images = float(found.group(1)), int(found.group(3))
        rate += images / seconds
        lines.append(found.group(0))
    return rate, lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--detkit", default=os.path.join(REPO, "build", "tools", "detkit"))
    parser.add_argument("--work-dir", help="dataset and outputs (default: a temp folder)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--images", type=int, default=32, help="validation images (512x384)")
    args = parser.parse_args()
    args.work_dir = args.work_dir or tempfile.mkdtemp(prefix="inference_scaling_")
    shapes = os.path.join(args.work_dir, "shapes")
    if not os.path.exists(os.path.join(shapes, "annotations", "instances_val.json")):
        subprocess.run([args.detkit, "make-shapes", "--out", shapes, "--size", "512x384",
                        "--train", "1", "--val", str(args.images), "--seed", "1"], check=True,
                       stdout=subprocess.DEVNULL)
    rates = {1: [], args.processes: []}
    for r in range(args.rounds):
        order = [1, args.processes] if r % 2 == 0 else [args.processes, 1]
        for p in order:
            rate, lines = run(args, p, os.path.join(args.work_dir, f"out_{p}_{r}"))
            rates[p].append(rate)
            for line in lines:
                print(f"    {line}", file=sys.stderr)
    one, many = statistics.median(rates[1]), statistics.median(rates[args.processes])
    print(f"{args.rounds} round(s), {args.images} images of 512x384, Mask R-CNN R50-FPN "
          f"({CONFIG}, random init, 100 detections per image)")
    print(f"{'layout':<24} {'images/s':>9} {'vs 1 process':>13}  per round")
    print(f"{'1 process x ' + str(args.threads) + ' threads':<24} {one:9.3f} {1.0:13.2f}  "
          + " ".join(f"{x:.3f}" for x in rates[1]))
    label = f"{args.processes} processes x {args.threads // args.processes} thread(s)"
    print(f"{label:<24} {many:9.3f} {many / one:13.2f}  "
          + " ".join(f"{x:.3f}" for x in rates[args.processes]))


if __name__ == "__main__":
    main()
