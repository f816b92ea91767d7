#!/usr/bin/env python3
"""Global training images/s of one config on this machine as 1 process x T threads, P processes x
T/P threads (`detkit benchmark --num-gpus P`), and 2 "machines" x 1 process each (two launchers
joined over 127.0.0.1 with --num-machines 2 --machine-rank R --dist-url tcp://127.0.0.1:PORT),
alternating which runs first every round; the gradient communication per iteration and the part
of it that backward did not hide; and, from the measured all-reduce rate and step time, a short
model of 8 devices and of 2-4 nodes.

    .venv/bin/python bench/distributed_scaling/distributed_scaling.py [--rounds 2]
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VENV_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
CONFIG = "configs/Torchvision-Comparisons/mask_rcnn_R_50_FPN_torchvision.yaml"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def last_json(text, label):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit(f"{label}: no JSON result:\n{text[-3000:]}")


PEER_ALLREDUCE = """
import os, sys, time, torch, torch.distributed as dist
rank, port, mb = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
torch.set_num_threads(1)
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
dist.init_process_group("gloo", rank=rank, world_size=2)
t = torch.ones(int(mb * 1e6 / 4))
dist.all_reduce(t)
times = []
for _ in range(3):
    dist.barrier(); s = time.time(); dist.all_reduce(t); times.append(time.time() - s)
if rank == 0: print(min(times))
dist.destroy_process_group()
"""


def allreduce_seconds(python, mb):
    """Best of 3: one all-reduce of `mb` MB between 2 processes, torch.distributed's Gloo (the same
    libtorch) on 127.0.0.1, nothing else running: the link rate the model below scales."""
    port = str(free_port())
    procs = [subprocess.Popen([python, "-c", PEER_ALLREDUCE, str(r), port, str(mb)],
                              stdout=subprocess.PIPE, text=True) for r in (1, 0)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    return float(outs[1].strip())


def benchmark_args(args):
    return ["benchmark", "--config-file", os.path.join(REPO, args.config), "--task", "train",
            "--iters", str(args.iters), "--window", args.window, "--json",
            "DATALOADER.NUM_WORKERS", "1"]


def run(label, commands, env):
    """Starts every command at once, waits for all; returns rank 0's JSON (the first command's)."""
    print(f"  {label}: " + " | ".join(" ".join(c) for c in commands), file=sys.stderr, flush=True)
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in commands]
    outs = [p.communicate(timeout=3600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            sys.exit(f"{label} failed (exit {p.returncode}):\n{err[-3000:]}")
    return last_json(outs[0][0], label)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--detkit", default=os.path.join(REPO, "build", "tools", "detkit"))
    parser.add_argument("--config", default=CONFIG)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--window", default="3:10")
    parser.add_argument("--work-dir")
    parser.add_argument("--python",
                        default=VENV_PYTHON if os.path.exists(VENV_PYTHON) else sys.executable,
                        help="a Python with torch 2.11 and torchvision 0.26 (default: .venv)")
    args = parser.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="distributed_scaling_")
    shapes = os.path.join(work, "shapes")
    if not os.path.exists(os.path.join(shapes, "annotations", "instances_val.json")):
        subprocess.run([args.detkit, "make-shapes", "--out", shapes, "--size", "512x384",
                        "--train", "64", "--val", "16", "--seed", "1"], check=True,
                       capture_output=True)
    env = dict(os.environ, DETKIT_DATASETS=work)
    for name in ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                 "MASTER_PORT", "DETKIT_NUM_THREADS"]:
        env.pop(name, None)
    t, p = args.threads, args.processes
    per = max(1, t // p)
    bench = benchmark_args(args)
    setups = {
        f"1 x {t} threads": lambda: [[args.detkit, "--num-threads", str(t)] + bench],
        f"{p} processes x {per}": lambda: [[args.detkit, "--num-threads", str(per)] + bench[:1] +
                                           ["--num-gpus", str(p)] + bench[1:]],
        f"2 machines x 1 x {per}": lambda port=None: [
            [args.detkit, "--num-threads", str(per)] + bench[:1] +
            ["--num-machines", "2", "--machine-rank", str(r), "--dist-url",
             f"tcp://127.0.0.1:{port or free_port()}"] + bench[1:] for r in range(2)],
    }
    results = {name: [] for name in setups}
    for round_ in range(args.rounds):
        names = list(setups) if round_ % 2 == 0 else list(reversed(setups))
        for name in names:
            if name.startswith("2 machines"):
                port = free_port()
                commands = setups[name](port)
            else:
                commands = setups[name]()
            results[name].append(run(f"round {round_ + 1}, {name}", commands, env))
    base = sum(r["images_per_second"] for r in results[f"1 x {t} threads"]) / args.rounds
    print(f"config {args.config}, {args.iters} iterations, window {args.window}, "
          f"global batch {results[f'1 x {t} threads'][0]['images_per_iter']}")
    print(f"{'setup':24s} {'images/s':>9s} {'vs 1 proc':>9s} {'s/iter':>8s} {'comm s':>8s} "
          f"{'not hidden s':>12s} {'share':>6s}")
    summary = {}
    for name, rs in results.items():
        ips = sum(r["images_per_second"] for r in rs) / len(rs)
        spi = sum(r["seconds_per_iter"] for r in rs) / len(rs)
        comm = sum(r.get("comm_seconds_per_iter", 0) for r in rs) / len(rs)
        wait = sum(r.get("comm_wait_seconds_per_iter", 0) for r in rs) / len(rs)
        summary[name] = (ips, spi, comm, wait)
        print(f"{name:24s} {ips:9.3f} {ips / base:9.2f} {spi:8.3f} {comm:8.3f} {wait:12.3f} "
              f"{100 * wait / spi:5.1f}%")
    # A scaling model from what was measured: a bare 2-process all-reduce of the gradients gives
    # the link rate; a ring all-reduce over N ranks moves 2 (N-1)/N of the bytes through each
    # rank's link; the part exposed here (after backward) is taken to scale with the transfer.
    ips, spi, comm, wait = summary[f"{p} processes x {per}"]
    grad_mb = results[f"{p} processes x {per}"][0]["gradient_mb"]
    bare = allreduce_seconds(args.python, grad_mb)
    rate = grad_mb / bare  # 2 ranks: 2 (2-1)/2 = 1 x the bytes per rank
    print(f"measured: a bare all-reduce of the {grad_mb:.0f} MB of gradients takes {bare:.3f} s "
          f"between 2 processes on 127.0.0.1 ({rate:.0f} MB/s per rank); in training, "
          f"{wait:.3f} s per step stays exposed after backward ({100 * wait / spi:.1f}% of "
          f"{spi:.2f} s)")
    for label, n, mb_s in [("8 ranks, one machine (this link rate)", 8, rate),
                           ("2 nodes x 8, 10 GbE (1170 MB/s)", 16, 1170),
                           ("4 nodes x 8, 10 GbE (1170 MB/s)", 32, 1170),
                           ("4 nodes x 8, 100 GbE (11700 MB/s)", 32, 11700)]:
        transfer = grad_mb * 2 * (n - 1) / n / mb_s
        exposed = wait * transfer / bare
        print(f"model: {label}: all-reduce {transfer:.3f} s per step, ~{exposed:.3f} s exposed "
              f"= {100 * exposed / spi:.1f}% of this step time")

if __name__ == "__main__":
    main()
