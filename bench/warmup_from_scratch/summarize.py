#!/usr/bin/env python3
"""Table of run_seeds.sh's results: per seed, the total loss (mean of 10 iterations) and the LR
at every 10th iteration, beside the LR Detectron2 applied at the same steps in the multi-step
fixture (../shared/fixtures/detectron2_bn_train, WARMUP_ITERS 1000, BASE_LR 0.01).

    bench/warmup_from_scratch/summarize.py OUT_DIR [FIXTURE_OUTPUTS_JSON]
"""
import json
import os
import sys


def main():
    out = sys.argv[1]
    fixture = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(__file__), "../../../shared/fixtures/detectron2_bn_train/outputs.json")
    runs = {}
    for name in sorted(os.listdir(out)):
        if name.startswith("seed") and name.endswith(".json"):
            text = open(os.path.join(out, name)).read().strip()
            runs[name[4:-5]] = json.loads(text) if text else None
    d2 = json.load(open(fixture))["sequences"]["warmup1000"]["steps"] if os.path.exists(fixture) else []
    for seed, r in runs.items():
        if r is None:
            print(f"seed {seed}: no result (diverged or failed; see seed{seed}.log)")
            continue
        losses, lrs = r["total_losses"], r["learning_rates"]
        print(f"seed {seed}: {len(losses)} iterations, all finite: "
              f"{all(x == x and abs(x) != float('inf') for x in losses)}, "
              f"{r['seconds_per_iter']:.2f} s/iter over {r['window']}")
    print()
    seeds = [s for s, r in runs.items() if r]
    print("| iterations | " + " | ".join(f"total_loss seed {s}" for s in seeds) + " | lr (detkit) |")
    print("|---|" + "---:|" * (len(seeds) + 1))
    n = min(len(runs[s]["total_losses"]) for s in seeds)
    for a in range(0, n, 10):
        row = [sum(runs[s]["total_losses"][a:a + 10]) / len(runs[s]["total_losses"][a:a + 10]) for s in seeds]
        print(f"| {a}-{min(a + 9, n - 1)} | " + " | ".join(f"{x:.3f}" for x in row)
              + f" | {runs[seeds[0]]['learning_rates'][a]:.4g} |")
    if d2:
        print()
        print("| step | lr detkit (every seed) | lr Detectron2 (fixture) |")
        print("|---:|---:|---:|")
        for k, step in enumerate(d2):
            ours = {runs[s]["learning_rates"][k] for s in seeds}
            print(f"| {k} | {', '.join(f'{x:.6g}' for x in sorted(ours))} | {step['lr']:.6g} |")


if __name__ == "__main__":
    main()
