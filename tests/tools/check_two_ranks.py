#!/usr/bin/env python3
"""check_two_ranks.py LAUNCHER DETKIT CONFIG WORKDIR -- KEY VALUE...

Runs `detkit train` as two ranks on this machine, over 127.0.0.1, started in one of three ways:
  torchrun  two processes with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
            LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) on a free port;
  slurm     two processes with the variables of an srun step (SLURM_STEP_ID, SLURM_NTASKS,
            SLURM_PROCID, SLURM_LOCALID, SLURM_STEP_TASKS_PER_NODE, SLURM_JOB_NODELIST), the
            port derived from SLURM_JOB_ID as detkit documents;
  launcher  one `detkit train --num-gpus 2`, which starts and supervises its two workers; then the
            trained model is evaluated again in one process and with --eval-only --num-gpus 2,
            and the results files and AP tables must be identical.
Checks that the job finishes within the time-out, that rank 0 alone wrote the job's files
(config.yaml, metrics.json, checkpoints) and that each rank logged to its own file.
"""
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time

TIMEOUT_S = 300


def port_is_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(processes, logs):
    """Waits for every process; returns their exit codes (None: killed at the time-out)."""
    deadline = time.time() + TIMEOUT_S
    while any(p.poll() is None for p in processes) and time.time() < deadline:
        time.sleep(0.2)
    codes = []
    for p, log in zip(processes, logs):
        codes.append(p.poll())
        if codes[-1] is None:
            p.kill()
            p.wait()
        log.close()
    return codes


def check_codes(codes, names, work):
    for code, name in zip(codes, names):
        if code != 0:
            print(open(os.path.join(work, name + ".out")).read())
            sys.exit(f"{name}: exit code {code}" + (f" (killed after {TIMEOUT_S} s)" if code is None else ""))
        print(f"{name}: finished")


def run_ranks(launcher, command, work, datasets):
    base = dict(os.environ, DETKIT_DATASETS=datasets)
    for name in ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]:
        base.pop(name, None)
    if launcher == "launcher":
        log = open(os.path.join(work, "launcher.out"), "w")
        p = subprocess.Popen(command[:4] + ["--num-gpus", "2"] + command[4:], env=base,
                             stdout=log, stderr=subprocess.STDOUT)
        check_codes(wait([p], [log]), ["launcher"], work)
        return open(os.path.join(work, "launcher.out")).read()
    if launcher == "torchrun":
        port = free_port()
        envs = [dict(base, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)) for r in range(2)]
    else:  # slurm: a job id whose port (20000 + id mod 20000) is free now
        port = next(p for p in random.sample(range(20000, 40000), 200) if port_is_free(p))
        envs = [dict(base, SLURM_STEP_ID="0", SLURM_NTASKS="2", SLURM_PROCID=str(r),
                     SLURM_LOCALID=str(r), SLURM_STEP_TASKS_PER_NODE="2",
                     SLURM_JOB_NODELIST="localhost", SLURM_JOB_ID=str(port - 20000))
                for r in range(2)]
    processes, logs = [], []
    for rank, env in enumerate(envs):
        logs.append(open(os.path.join(work, f"rank{rank}.out"), "w"))
        processes.append(subprocess.Popen(command, env=env, stdout=logs[-1], stderr=subprocess.STDOUT))
    check_codes(wait(processes, logs), ["rank0", "rank1"], work)
    return "".join(open(os.path.join(work, f"rank{r}.out")).read() for r in range(2))


def table(output, task):
    """The AP table logged after 'Evaluation results for <task>:' (its three lines)."""
    at = output.index(f"Evaluation results for {task}:")
    return output[at:].split("\n")[1:4]


def main():
    launcher = sys.argv[1]
    assert launcher in ("torchrun", "slurm", "launcher"), launcher
    split = sys.argv.index("--")
    detkit, config, work = sys.argv[2:split]
    overrides = sys.argv[split + 1:]
    shutil.rmtree(work, ignore_errors=True)
    datasets, out = os.path.join(work, "datasets"), os.path.join(work, "out")
    subprocess.run([detkit, "make-shapes", "--out", os.path.join(datasets, "shapes"), "--train",
                    "8", "--val", "2", "--size", "64x64"], check=True, capture_output=True)
    command = [detkit, "--num-threads", "1", "train", "--config-file", config,
               "OUTPUT_DIR", out] + overrides
    output = run_ranks(launcher, command, work, datasets)
    for name in ["config.yaml", "metrics.json", "model_final.pth", "last_checkpoint", "log.txt",
                 "log.txt.rank1"]:
        assert os.path.exists(os.path.join(out, name)), f"{name} missing from {os.listdir(out)}"
    print("OUTPUT_DIR:", " ".join(sorted(os.listdir(out))))
    rank1 = open(os.path.join(out, "log.txt.rank1")).read()
    assert "Rank 1 of 2 (local rank 1 of 2), master " in rank1, rank1
    assert "Rank 0 of 2" in open(os.path.join(out, "log.txt")).read()
    iterations = [json.loads(line)["iteration"] for line in open(os.path.join(out, "metrics.json"))]
    print("metrics.json iterations:", iterations)
    assert iterations[-1] == 2, iterations
    if launcher != "launcher":
        return
    # One AP table for the job, rank 0's; the same detections and AP as one process evaluating
    # the same weights.
    assert output.count("Evaluation results for bbox:") == 1, output
    single = os.path.join(work, "single")
    log = open(os.path.join(work, "single.out"), "w")
    p = subprocess.Popen(command[:4] + ["--eval-only"] + command[4:] +
                         ["OUTPUT_DIR", single, "MODEL.WEIGHTS", os.path.join(out, "model_final.pth")],
                         env=dict(os.environ, DETKIT_DATASETS=datasets), stdout=log,
                         stderr=subprocess.STDOUT)
    check_codes(wait([p], [log]), ["single"], work)
    one = open(os.path.join(work, "single.out")).read()
    # And --eval-only on two ranks, as the launcher starts them.
    again = os.path.join(work, "eval_two")
    log = open(os.path.join(work, "eval_two.out"), "w")
    p = subprocess.Popen(command[:4] + ["--eval-only", "--num-gpus", "2"] + command[4:] +
                         ["OUTPUT_DIR", again, "MODEL.WEIGHTS", os.path.join(out, "model_final.pth")],
                         env=dict(os.environ, DETKIT_DATASETS=datasets), stdout=log,
                         stderr=subprocess.STDOUT)
    check_codes(wait([p], [log]), ["eval_two"], work)
    results = [open(os.path.join(d, "inference", "coco_instances_results.json")).read()
               for d in (out, single, again)]
    print("detections: two ranks", len(json.loads(results[0])), "one process",
          len(json.loads(results[1])), "two ranks --eval-only", len(json.loads(results[2])))
    assert results[0] == results[1] == results[2], "the results files differ"
    for task in ("bbox", "segm"):
        print(task, "two ranks:", table(output, task)[2], "one process:", table(one, task)[2])
        assert table(output, task) == table(one, task), task


if __name__ == "__main__":
    main()
