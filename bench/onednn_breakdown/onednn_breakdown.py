#!/usr/bin/env python3
"""Where a training step's oneDNN time goes, measured in place: every convolution, deconvolution
and reorder libtorch runs on its oneDNN, timed by oneDNN itself (ONEDNN_VERBOSE=1), per iteration.

    onednn_breakdown.py [--config-file F] [--iters 4] [--extra 4] [--top 25] [-- OPTS...]
    onednn_breakdown.py --log VERBOSE.log --per 7    (a log written beforehand: calls / 7)

Runs `detkit benchmark --task train` twice, for ITERS and for ITERS + EXTRA iterations: the calls
per iteration are the longer run's excess over EXTRA, each at the median time of its primitive and
shape (one call in a few hundred stalls, 20x its median: not steady state). Unlike
`--profile`, it adds no per-op overhead (the step time is within noise of a plain run). Prints the
time per primitive kind and the costliest primitives by shape, with each convolution's GFLOPS
(2 flops per multiply-add of the direct convolution).
"""
import argparse
import collections
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What starts an `exec` line: oneDNN 3's, which torch 2.11 writes ("onednn_verbose,v1,primitive,
# exec,cpu,...", also read without the "v1,"), and oneDNN 2's ("onednn_verbose,exec,cpu,..." or
# "dnnl_verbose,exec,cpu,..."), for logs written beforehand. The fields after it are the same.
EXEC_PREFIXES = ("onednn_verbose,v1,primitive,exec,", "onednn_verbose,primitive,exec,",
                 "onednn_verbose,exec,", "dnnl_verbose,exec,")


def direct_flops(problem):
    """2 x multiply-adds of the direct convolution in a oneDNN problem descriptor such as
    mb2_ic256oc256_ih96oh96kh3sh1dh0ph1_iw128ow128kw3sw1dw0pw1 (g: groups; 1-D sides default 1)."""
    v = {k: int(n) for k, n in re.findall(r"([a-z]+)(\d+)", problem)}
    if "ic" not in v or "oc" not in v:
        return 0
    return 2 * v.get("mb", 1) * v["oc"] * v.get("oh", 1) * v.get("ow", 1) * (
        v["ic"] // v.get("g", 1)) * v.get("kh", 1) * v.get("kw", 1)


def parse(lines):
    """(kind, propagation, implementation, layouts, problem) -> the milliseconds of each call, for
    every `exec` line of oneDNN's verbose output (EXEC_PREFIXES)."""
    rows = collections.defaultdict(list)
    for line in lines:
        prefix = next((p for p in EXEC_PREFIXES if line.startswith(p)), None)
        if prefix is None:
            continue
        f = ["verbose", "exec"] + line[len(prefix):].rstrip("\n").split(",")
        if len(f) < 10:
            continue
        rows[(f[3], f[5], f[4], f[6], f[-2])].append(float(f[-1]))
    return rows


def per_iteration(long_rows, short_rows, per):
    """key -> (ms, calls) per iteration: the calls the longer run adds, each at the median time
    of its calls there (a stall of one call, which happens, does not count as steady state)."""
    out = {}
    for key, times in long_rows.items():
        calls = (len(times) - len(short_rows.get(key, []))) / per
        if calls > 0:
            out[key] = (calls * statistics.median(times), calls)
    return out


def report(rows, top):
    kinds = collections.defaultdict(float)
    for (kind, prop, *_), (ms, _) in rows.items():
        kinds[(kind, prop)] += ms
    print("oneDNN time per iteration, by primitive:")
    for (kind, prop), ms in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {ms:8.1f} ms  {kind} {prop}")
    print(f"  {sum(kinds.values()):8.1f} ms  all")
    print(f"\nThe {top} costliest (ms per iteration, calls per iteration, GFLOPS for convolutions):")
    for (kind, prop, impl, layouts, problem), (ms, calls) in sorted(
            rows.items(), key=lambda kv: -kv[1][0])[:top]:
        flops = direct_flops(problem) * calls if kind == "convolution" else 0
        speed = f"{flops / (ms * 1e-3) / 1e9:6.0f}" if flops and ms > 0 else "     -"
        layout = " -> ".join(re.findall(r"f32::blocked:(\w+)", layouts)[:2]) if kind == "reorder" else ""
        print(f"  {ms:7.1f} {calls:6.1f} {speed}  {kind[:7]:7} {prop[:16]:16} {impl[:24]:24} "
              f"{problem} {layout}")


def run_benchmark(args, iters):
    command = [os.path.join(args.build, "tools", "detkit"), "--num-threads", str(args.threads),
               "benchmark", "--config-file", args.config_file, "--task", "train",
               "--iters", str(iters), "--window", f"1:{iters}"] + args.opts
    env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"onednn_breakdown: {' '.join(command)} failed ({done.returncode}):\n"
                 + done.stdout[-2000:])
    step = re.search(r"s/iter\s+([\d.]+)", done.stdout)
    return parse(done.stdout.splitlines()), step.group(1) if step else "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config-file", default=os.path.join(
        ROOT, "configs/Torchvision-Comparisons/mask_rcnn_R_50_FPN_torchvision.yaml"))
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iters", type=int, default=4, help="iterations of the short run")
    parser.add_argument("--extra", type=int, default=4, help="iterations the long run adds")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--log", help="parse this verbose log instead of running detkit")
    parser.add_argument("--per", type=float, default=1.0, help="with --log: divide by this")
    parser.add_argument("opts", nargs=argparse.REMAINDER, help="config overrides after --")
    args = parser.parse_args()
    args.opts = [o for o in args.opts if o != "--"]
    if args.log:
        with open(args.log) as f:
            rows = per_iteration(parse(f), {}, args.per)
    else:
        short, _ = run_benchmark(args, args.iters)
        long_rows, step = run_benchmark(args, args.iters + args.extra)
        rows = per_iteration(long_rows, short, args.extra)
        print(f"{args.config_file}: {args.extra} iterations ({args.iters + 1}..{args.iters + args.extra}"
              f" of the longer run), {args.threads} threads; that run's step {step} s/iter\n")
    report(rows, args.top)


if __name__ == "__main__":
    main()
