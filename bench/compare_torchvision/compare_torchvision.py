#!/usr/bin/env python3
"""detkit vs torchvision side by side on this machine: training, inference and data loading
images/s of Mask R-CNN, Faster R-CNN, RetinaNet and Keypoint R-CNN R50-FPN, alternating A/B
runs in one invocation (--models picks some of mask,faster,retinanet,keypoint); with
--detectron2-env, Detectron2 itself as a third side (detectron2_peer.py: the same YAML).

    cmake --build build && .venv/bin/python bench/compare_torchvision/compare_torchvision.py

Both sides run on a shapes dataset made here by `detkit make-shapes` (512x384 images, so the
384/512 resize is the identity for both; --image-size 1333x800 makes 1333x800 images and sets
Detectron2's own test and training size, shorter side 800 and longer <= 1333), random init, 2 images per batch, SGD (momentum 0.9,
weight decay 1e-4, lr 0.002), the same threads and loader workers. detkit runs
`detkit benchmark --json` with configs/Torchvision-Comparisons/*; torchvision runs
torchvision_peer.py. Each measurement is a fresh process; the order of the two alternates every
round, and the table shows the median over rounds. docs/BENCHMARKS.md lists the differences
that remain between the two setups.

--device cuda runs every side on the GPU (detkit MODEL.DEVICE cuda, the peers --device cuda:
synchronised timing, peak GPU memory); --amp there is float16 autocast on both sides (detkit
SOLVER.AMP.PRECISION float16; O2 with a static loss scale of 64 on both), and the table adds
each side's peak GPU memory (torch.cuda.max_memory_allocated over the window, where the side
reports it) and names the GPU.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VENV_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
CONFIGS = {"mask": "configs/Torchvision-Comparisons/mask_rcnn_R_50_FPN_torchvision.yaml",
           "faster": "configs/Torchvision-Comparisons/faster_rcnn_R_50_FPN_torchvision.yaml",
           "retinanet": "configs/Torchvision-Comparisons/retinanet_R_50_FPN_torchvision.yaml",
           "keypoint": "configs/Torchvision-Comparisons/keypoint_rcnn_R_50_FPN_torchvision.yaml"}
# Issue 18: Mask and Faster R-CNN 1.5x in training and inference, the loader 5x; issue 15:
# RetinaNet and Keypoint R-CNN 1.3x.
TARGETS = {"train": 1.5, "eval": 1.5, "data": 5.0}
TARGETS_ISSUE_15 = {"retinanet": 1.3, "keypoint": 1.3}


def target(task, model):
    return TARGETS_ISSUE_15.get(model, TARGETS[task]) if task != "data" else TARGETS[task]


def tree_pids(root):
    """`root` and every process below it (the peer's DataLoader workers)."""
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:  # gone meanwhile
            pass
    return pids


def kilobytes(path, field):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreeMemory(threading.Thread):
    """Samples a process tree every `period` s: the largest sum over its live processes of each
    one's peak RSS (VmHWM: main process plus loader workers, as issue 18 counts) and of their
    proportional set sizes (Pss: shared pages split between the processes that share them)."""

    def __init__(self, root, period=0.5):
        super().__init__(daemon=True)
        self.root, self.period, self.rss_kb, self.pss_kb = root, period, 0, 0
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(self.period):
            pids = tree_pids(self.root)
            self.rss_kb = max(self.rss_kb, sum(kilobytes(f"/proc/{p}/status", "VmHWM") for p in pids))
            self.pss_kb = max(self.pss_kb,
                              sum(kilobytes(f"/proc/{p}/smaps_rollup", "Pss") for p in pids))


def run_json(command, env, label):
    """Runs `command`, returns the JSON object on its last stdout line with the peak memory of
    its process tree added; stderr goes to a log."""
    print(f"  {label}: {' '.join(command)}", file=sys.stderr, flush=True)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    memory = TreeMemory(process.pid)
    memory.start()
    stdout, stderr = process.communicate()
    memory.done.set()
    memory.join()
    if process.returncode != 0:
        raise RuntimeError(f"{label} failed (exit {process.returncode}):\n{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["tree_peak_rss_mb"] = memory.rss_kb / 1024
    result["tree_peak_pss_mb"] = memory.pss_kb / 1024
    return result


def detkit_command(args, task, model, iters, window):
    command = [args.detkit, "--num-threads", str(args.threads), "benchmark", "--config-file",
               os.path.join(REPO, CONFIGS[model]), "--task", task, "--iters", str(iters),
               "--window", window, "--json", "DATALOADER.NUM_WORKERS", str(args.workers)]
    command += ["INPUT.MIN_SIZE_TRAIN", f"({args.min_size},)", "INPUT.MAX_SIZE_TRAIN",
                str(args.max_size), "INPUT.MIN_SIZE_TEST", str(args.min_size),
                "INPUT.MAX_SIZE_TEST", str(args.max_size)]
    if task == "data":  # full-image bitmasks, as the torchvision loader makes
        command += ["INPUT.MASK_FORMAT", "bitmask"]
    if args.amp and task != "data":
        command += ["SOLVER.AMP.ENABLED", "True", "SOLVER.AMP.OPT_LEVEL", args.amp]
        if args.device == "cuda":  # the peer's float16 (Detectron2's AMPTrainer), its O2 scale
            command += ["SOLVER.AMP.PRECISION", "float16"]
            if args.amp == "O2":
                command += ["SOLVER.AMP.LOSS_SCALE", "64"]
    if task == "train" and args.warmup_iters:
        command += ["SOLVER.WARMUP_ITERS", str(args.warmup_iters)]
    if task == "train" and model == "keypoint":
        command += KEYPOINT_TRAINING
    if args.device == "cuda":  # the YAMLs say cpu
        command += ["MODEL.DEVICE", "cuda"]
    return command


# The models the Detectron2 side runs (its keypoint training would need the triangles' keypoint
# metadata registered).
D2_MODELS = ("mask", "faster", "retinanet")

# Keypoint R-CNN trains on the triangles and their corners (one class, 3 keypoints).
KEYPOINT_TRAINING = ["DATASETS.TRAIN", "('shapes_triangles_train',)", "MODEL.ROI_HEADS.NUM_CLASSES",
                     "1", "MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS", "3"]


def peer_command(args, task, model, iters, window):
    command = [args.python, os.path.join(HERE, "torchvision_peer.py"), "--task", task,
               "--model", model, "--dataset-dir", os.path.join(args.work_dir, "shapes"),
               "--iters", str(iters), "--window", window, "--threads", str(args.threads),
               "--workers", str(args.workers), "--min-size", str(args.min_size),
               "--max-size", str(args.max_size)]
    if args.amp and task != "data":
        command += ["--amp"] + ([args.amp] if args.device == "cuda" else [])
    if task == "train" and args.warmup_iters:
        command += ["--warmup-iters", str(args.warmup_iters)]
    if task == "train" and model == "keypoint":
        command += ["--num-classes", "1", "--num-keypoints", "3"]
    if args.device == "cuda":
        command += ["--device", "cuda"]
    if args.peers_flush_denormal:
        command += ["--flush-denormal"]
    return command


def detectron2_command(args, task, model, iters, window):
    """Detectron2's own trainer pieces on the same YAML (detectron2_peer.py), run by Debian's
    python3 after sourcing --detectron2-env (which puts Detectron2's source tree on PYTHONPATH)."""
    peer = [args.python, os.path.join(HERE, "detectron2_peer.py"), "--task", task,
            "--config-file", os.path.join(REPO, CONFIGS[model]),
            "--dataset-dir", os.path.join(args.work_dir, "shapes"), "--iters", str(iters),
            "--window", window, "--threads", str(args.threads), "--workers", str(args.workers),
            "--min-size", str(args.min_size), "--max-size", str(args.max_size)]
    if args.device == "cuda":
        peer += ["--device", "cuda"]
    if args.peers_flush_denormal:
        peer += ["--flush-denormal"]
    quoted = " ".join(f"'{part}'" for part in peer)
    return ["bash", "-c", f"source '{args.detectron2_env}' && OMP_NUM_THREADS={args.threads} "
                          f"exec {quoted}"]


def cuda_device_name(python):
    """The name of GPU 0 as `python`'s torch sees it; exits with one line when there is none."""
    probe = subprocess.run(
        [python, "-c", "import torch; print(torch.cuda.get_device_name(0) "
                       "if torch.cuda.is_available() else '')"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = probe.stdout.strip().splitlines()
    if probe.returncode != 0:
        error = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        sys.exit(f"--device cuda: no CUDA device visible ({python} failed: {error})")
    if not lines or not lines[-1]:
        sys.exit("--device cuda: no CUDA device visible")
    return lines[-1]


def save_raw(args, results):
    raw = os.path.join(args.work_dir, "results.json")
    with open(raw, "w") as f:
        json.dump([{"task": t, "model": m, "side": s, "runs": v}
                   for (t, m, s), v in results.items()], f)
    return raw


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--detkit", default=os.path.join(REPO, "build", "tools", "detkit"))
    parser.add_argument("--python",
                        default=VENV_PYTHON if os.path.exists(VENV_PYTHON) else sys.executable,
                        help="a Python with torch 2.11 and torchvision 0.26 (default: .venv)")
    parser.add_argument("--work-dir", help="dataset and raw results (default: a temp folder)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--models", default="mask,faster,retinanet")
    parser.add_argument("--tasks", default="train,eval,data")
    parser.add_argument("--train", default="10:3:10", help="ITERS:A:B for training")
    parser.add_argument("--eval", default="40:8:40", help="ITERS:A:B for inference (images)")
    parser.add_argument("--data", default="100:20:100", help="ITERS:A:B for the loader (batches)")
    parser.add_argument("--amp", nargs="?", const="O1", choices=["O1", "O2"],
                        help="train and eval under bfloat16 autocast on both sides (detkit: "
                             "SOLVER.AMP.ENABLED True at this SOLVER.AMP.OPT_LEVEL, O1 when not "
                             "given; torchvision: torch.autocast, fp32 weights); with --device "
                             "cuda float16 (detkit SOLVER.AMP.PRECISION float16; torchvision O1 "
                             "with GradScaler, O2 float16 weights with fp32 masters; O2 with a "
                             "static loss scale of 64 on both sides)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="where every side runs (cuda: detkit MODEL.DEVICE cuda, the peers "
                             "--device cuda; the table adds peak GPU memory)")
    parser.add_argument("--warmup-iters", type=int, default=0,
                        help="training on both sides: Detectron2's linear warm-up over these "
                             "iterations (what a long window from random weights needs)")
    parser.add_argument("--peers-flush-denormal", action="store_true",
                        help="torchvision and Detectron2 flush subnormal floats to zero, as detkit "
                             "does by default (FLUSH_DENORMAL); PyTorch's default keeps them")
    parser.add_argument("--detectron2-env",
                        help="a shell script that puts Detectron2's source tree on PYTHONPATH for "
                             "Debian's python3: adds Detectron2 itself as a third side (train and "
                             "eval of mask, faster, retinanet; docs/BENCHMARKS.md says how one was made)")
    parser.add_argument("--image-size", default="512x384",
                        help="WxH of the dataset's images, and the resize both sides run: "
                             "shorter side min(W, H), longer side <= max(W, H) (1333x800: "
                             "Detectron2's own size)")
    args = parser.parse_args()
    width, height = (int(v) for v in args.image_size.split("x"))
    args.min_size, args.max_size = min(width, height), max(width, height)
    args.gpu_name = cuda_device_name(args.python) if args.device == "cuda" else None
    args.work_dir = args.work_dir or tempfile.mkdtemp(prefix="compare_torchvision_")
    if not os.access(args.detkit, os.X_OK):
        sys.exit(f"no detkit binary at {args.detkit}: build first (cmake --build build)")

    shapes = os.path.join(args.work_dir, "shapes")
    made = os.path.join(shapes, "size.txt")  # a dataset of another size is made again
    if not os.path.exists(made) or open(made).read() != args.image_size:
        subprocess.run([args.detkit, "make-shapes", "--out", shapes, "--size", args.image_size,
                        "--train", "64", "--val", "16", "--seed", "1"], check=True)
        with open(made, "w") as f:
            f.write(args.image_size)
    env = dict(os.environ, DETKIT_DATASETS=args.work_dir)

    plan = [(task, model) for task in args.tasks.split(",") for model in args.models.split(",")
            if not (task == "data" and model != "mask")]  # one loader row: with masks
    results = {}  # (task, model, side) -> [result per round]
    for r in range(args.rounds):
        print(f"round {r + 1} of {args.rounds}", file=sys.stderr, flush=True)
        for task, model in plan:
            iters, begin, end = getattr(args, task).split(":")
            window = f"{begin}:{end}"
            sides = [("detkit", detkit_command(args, task, model, iters, window)),
                     ("torchvision", peer_command(args, task, model, iters, window))]
            if args.detectron2_env and task != "data" and model in D2_MODELS:
                sides.append(("detectron2", detectron2_command(args, task, model, iters, window)))
            if r % 2 == 1:
                sides.reverse()
            for side, command in sides:
                try:
                    result = run_json(command, env, f"{side} {task} {model}")
                except RuntimeError as failure:  # keep what the other runs measured
                    save_raw(args, results)
                    for (t, m, s), runs in results.items():
                        print(f"{t} {m} {s}: " + ", ".join(
                            f"{run['images_per_second']:.3f} img/s" for run in runs))
                    sys.exit(str(failure))
                results.setdefault((task, model, side), []).append(result)

    raw = save_raw(args, results)
    print_table(args, plan, results)
    print(f"raw results: {raw}")


def median(runs, key):
    return statistics.median(run[key] for run in runs)


def gpu_mb(runs):
    """Median peak GPU memory (MiB) of the runs, or n/a where a side does not report it."""
    if not runs or any("peak_gpu_mb" not in run for run in runs):
        return "n/a"
    return f"{median(runs, 'peak_gpu_mb'):.0f}"


def print_table(args, plan, results):
    gpu = args.device == "cuda"
    precision = "float16" if gpu else "bfloat16"
    print(f"{args.rounds} round(s), {args.threads} threads, {args.workers} loader workers, "
          f"2 images per training batch, {args.image_size} images (shorter side {args.min_size}, "
          f"longer <= {args.max_size})"
          + (f", GPU {args.gpu_name}" if gpu else "")
          + (f", {precision} autocast on both sides (detkit {args.amp})" if args.amp else "")
          + (", subnormals flushed on every side" if args.peers_flush_denormal else
             ", subnormals flushed by detkit only (each side's default)"))
    header = (f"{'task':<6} {'model':<7} {'detkit img/s':>12} {'tv img/s':>9} {'ratio':>6} "
              f"{'target':>7}  {'detkit s/it':>11} {'tv s/it':>8} {'data s/it d|tv':>15} "
              f"{'RSS MB d|tv':>12} "
              + (f"{'GPU MiB d|tv':>13} " if gpu else "")
              + f"{'tree RSS|PSS d/tv':>18}  per-round ratios")
    print(header)
    for task, model in plan:
        d, t = results[(task, model, "detkit")], results[(task, model, "torchvision")]
        ratio = median(d, "images_per_second") / median(t, "images_per_second")
        rounds = " ".join(f"{a['images_per_second'] / b['images_per_second']:.2f}"
                          for a, b in zip(d, t))
        met = "met" if ratio >= target(task, model) else "NOT met"
        print(f"{task:<6} {model:<7} {median(d, 'images_per_second'):12.3f} "
              f"{median(t, 'images_per_second'):9.3f} {ratio:6.2f} "
              f"{'>=' + str(target(task, model)):>7}  {median(d, 'seconds_per_iter'):11.4f} "
              f"{median(t, 'seconds_per_iter'):8.4f} "
              f"{median(d, 'data_seconds_per_iter'):7.4f}|{median(t, 'data_seconds_per_iter'):.4f} "
              f"{median(d, 'peak_rss_mb'):6.0f}|{median(t, 'peak_rss_mb'):.0f} "
              + (f"{gpu_mb(d):>6}|{gpu_mb(t):<6} " if gpu else "")
              + f"{median(d, 'tree_peak_rss_mb') / median(t, 'tree_peak_rss_mb'):8.2f}|"
              f"{median(d, 'tree_peak_pss_mb') / median(t, 'tree_peak_pss_mb'):.2f}"
              f"  {rounds} ({met})")
        print(f"       {'':<7} process trees, peak MB: RSS (each process's peak, summed over the "
              f"live ones) detkit {median(d, 'tree_peak_rss_mb'):.0f}, torchvision "
              f"{median(t, 'tree_peak_rss_mb'):.0f}; PSS detkit {median(d, 'tree_peak_pss_mb'):.0f}, "
              f"torchvision {median(t, 'tree_peak_pss_mb'):.0f}")
    for task, model in plan:
        d, d2 = results[(task, model, "detkit")], results.get((task, model, "detectron2"))
        if not d2:
            continue
        ratio = median(d, "images_per_second") / median(d2, "images_per_second")
        rounds = " ".join(f"{a['images_per_second'] / b['images_per_second']:.2f}"
                          for a, b in zip(d, d2))
        print(f"{task:<6} {model:<7} detkit {median(d, 'images_per_second'):.3f} vs Detectron2 "
              f"{median(d2, 'images_per_second'):.3f} img/s: {ratio:.2f}x (per round {rounds}); "
              f"s/it {median(d, 'seconds_per_iter'):.4f} vs {median(d2, 'seconds_per_iter'):.4f}; "
              f"peak RSS MB (main process) {median(d, 'peak_rss_mb'):.0f} vs "
              f"{median(d2, 'peak_rss_mb'):.0f}, process tree {median(d, 'tree_peak_rss_mb'):.0f} vs "
              f"{median(d2, 'tree_peak_rss_mb'):.0f} ({median(d, 'tree_peak_rss_mb') / median(d2, 'tree_peak_rss_mb'):.2f}x)"
              + (f"; peak GPU MiB {gpu_mb(d)} vs {gpu_mb(d2)}" if gpu else ""))
    for model in args.models.split(","):
        runs = results.get(("train", model, "detkit"))
        if runs and gpu:  # detkit's GEMM peak is the CPU's: no share of it on the GPU
            print(f"detkit train {model}: {median(runs, 'train_gflops_per_iter'):.1f} GFLOP/iter "
                  f"(conv + linear), {median(runs, 'achieved_gflops'):.1f} GFLOPS on the GPU")
        elif runs:
            print(f"detkit train {model}: {median(runs, 'train_gflops_per_iter'):.1f} GFLOP/iter "
                  f"(conv + linear), {median(runs, 'achieved_gflops'):.1f} GFLOPS = "
                  f"{100 * median(runs, 'gemm_peak_share'):.0f}% of the measured GEMM peak "
                  f"({median(runs, 'gemm_peak_gflops'):.1f} GFLOPS, 2048^2 matmul, "
                  f"{args.threads} threads)")


if __name__ == "__main__":
    main()
