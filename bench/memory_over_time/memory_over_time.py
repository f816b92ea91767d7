#!/usr/bin/env python3
"""memory_over_time.py DETKIT CONFIG WORKDIR [--iters N] [--every K] [KEY VALUE ...]

Trains CONFIG with `detkit train` for N iterations (default 300, no evaluation) and samples the
process's resident memory (VmRSS, and VmHWM, the peak so far, from /proc/PID/status) each time
its log reports an iteration that is a multiple of K (default 50; the log prints every 20, so
the sample is taken at the first printed iteration at or after each multiple). Prints one row
per sample and the growth from the second sample to the last (the first includes warm-up
allocations). Not a test: a measurement for docs/BENCHMARKS.md.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time


def status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("detkit")
    parser.add_argument("config")
    parser.add_argument("workdir")
    parser.add_argument("--iters", type=int, default=300)
    parser.add_argument("--every", type=int, default=50)
    args, overrides = parser.parse_known_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    log_path = os.path.join(args.workdir, "train.log")
    command = [args.detkit, "train", "--config-file", args.config,
               "OUTPUT_DIR", os.path.join(args.workdir, "out"), "SOLVER.MAX_ITER", str(args.iters),
               "DATASETS.TEST", "()"] + overrides
    with open(log_path, "w") as log:
        p = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    pattern = re.compile(r"iter: (\d+) ")
    samples, next_mark, seen = [], args.every - 1, 0
    while p.poll() is None:
        text = open(log_path).read()
        for m in pattern.finditer(text, seen):
            seen = m.end()
            iteration = int(m.group(1))
            if iteration >= next_mark:
                try:
                    rss, peak = status(p.pid)
                except OSError:
                    break
                samples.append((iteration, rss, peak))
                print(f"iteration {iteration:5d}: RSS {rss:7.1f} MB, peak {peak:7.1f} MB", flush=True)
                while next_mark <= iteration:
                    next_mark += args.every
        time.sleep(0.2)
    if p.returncode != 0:
        sys.exit(f"detkit train failed ({p.returncode}); see {log_path}")
    if len(samples) >= 3:
        first, last = samples[1], samples[-1]
        print(f"RSS from iteration {first[0]} to {last[0]}: {first[1]:.1f} -> {last[1]:.1f} MB "
              f"({last[1] - first[1]:+.1f} MB, {100 * (last[1] - first[1]) / first[1]:+.1f} %)")


if __name__ == "__main__":
    main()
