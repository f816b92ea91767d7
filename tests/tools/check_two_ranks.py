#!/usr/bin/env python3
"""check_two_ranks.py DETKIT CONFIG WORKDIR -- KEY VALUE...

Runs `detkit train` as two ranks on this machine, joined over 127.0.0.1 on a free port with
torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT),
and checks that both finish within the time-out, that rank 0 alone wrote the job's files
(config.yaml, metrics.json, checkpoints) and that each rank logged to its own file.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time

TIMEOUT_S = 300


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    split = sys.argv.index("--")
    detkit, config, work = sys.argv[1:split]
    overrides = sys.argv[split + 1:]
    shutil.rmtree(work, ignore_errors=True)
    datasets, out = os.path.join(work, "datasets"), os.path.join(work, "out")
    subprocess.run([detkit, "make-shapes", "--out", os.path.join(datasets, "shapes"), "--train",
                    "8", "--val", "2", "--size", "64x64"], check=True, capture_output=True)
    port = free_port()
    ranks = []
    for rank in range(2):
        env = dict(os.environ, DETKIT_DATASETS=datasets, RANK=str(rank), LOCAL_RANK=str(rank),
                   WORLD_SIZE="2", LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        log = open(os.path.join(work, f"rank{rank}.out"), "w")
        command = [detkit, "--num-threads", "1", "train", "--config-file", config,
                   "OUTPUT_DIR", out] + overrides
        ranks.append((subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    deadline = time.time() + TIMEOUT_S
    codes = [None, None]
    while None in codes and time.time() < deadline:
        codes = [p.poll() for p, _ in ranks]
        time.sleep(0.2)
    for rank, (p, log) in enumerate(ranks):
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
        output = open(os.path.join(work, f"rank{rank}.out")).read()
        if codes[rank] != 0:
            print(output)
            sys.exit(f"rank {rank}: exit code {codes[rank]}"
                     + (f" (killed after {TIMEOUT_S} s)" if codes[rank] is None else ""))
        print(f"rank {rank}: finished")
    for name in ["config.yaml", "metrics.json", "model_final.pth", "last_checkpoint", "log.txt",
                 "log.txt.rank1"]:
        assert os.path.exists(os.path.join(out, name)), f"{name} missing from {os.listdir(out)}"
    written = sorted(os.listdir(out))
    print("OUTPUT_DIR:", " ".join(written))
    rank1 = open(os.path.join(out, "log.txt.rank1")).read()
    assert "Rank 1 of 2 (local rank 1 of 2)" in rank1, rank1
    assert "Rank 0 of 2" in open(os.path.join(out, "log.txt")).read()
    iterations = [json.loads(line)["iteration"] for line in open(os.path.join(out, "metrics.json"))]
    print("metrics.json iterations:", iterations)
    assert iterations[-1] == 2, iterations


if __name__ == "__main__":
    main()
