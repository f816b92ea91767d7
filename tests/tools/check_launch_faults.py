#!/usr/bin/env python3
"""check_launch_faults.py DETKIT CONFIG WORKDIR -- KEY VALUE...

What a job of several ranks does when something goes wrong (all on 127.0.0.1, bounded):
  kill-a-rank   `detkit train --num-gpus 2` running; rank 1 gets SIGKILL. The launcher must exit
                non-zero within 60 s naming rank 1 and the signal, leave no worker behind, and
                last_checkpoint must still name a complete checkpoint; `--resume` then ends
                with exactly the checkpoint of a run that was never interrupted.
  sigterm       the launcher gets SIGTERM (a scheduler's preemption): it passes it on, both
                ranks stop after the same step, rank 0 saves model_{iter}.pth, the launcher
                exits 75 saying so, and `--resume` ends with exactly the checkpoint of a run
                that was never interrupted (as it does after the kill).
  launcher-dies the launcher gets SIGKILL: its workers die with it (no orphans).
  missing-peer  rank 0 of 2 started alone with --dist-timeout 3: it ends within 30 s naming the
                address and how many ranks arrived.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid):
    """Direct children of pid, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return found


def rank_of(pid):
    env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    return next(int(v[5:]) for v in env if v.startswith(b"RANK="))


def alive(pid):
    try:
        state = open(f"/proc/{pid}/stat").read()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


def wait_until(condition, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.1)
    sys.exit(f"timed out after {seconds} s waiting for {what}")


class Launch:
    def __init__(self, detkit, config, out, overrides, env, log, flags=()):
        self.out, self.log_path = out, log
        self.log = open(log, "w")
        command = [detkit, "--num-threads", "1", "train", "--num-gpus", "2", *flags,
                   "--config-file", config, "OUTPUT_DIR", out] + overrides
        self.p = subprocess.Popen(command, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def workers_training(self):
        """Both workers started and rank 0 has written a checkpoint."""
        wait_until(lambda: os.path.exists(os.path.join(self.out, "last_checkpoint"))
                   or self.p.poll() is not None, 180, "the first checkpoint")
        if self.p.poll() is not None:
            sys.exit("the launcher ended early:\n" + open(self.log_path).read())
        workers = children(self.p.pid)
        assert len(workers) == 2, workers
        return {rank_of(w): w for w in workers}

    def ending(self, seconds):
        start = time.time()
        try:
            code = self.p.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            sys.exit(f"the launcher did not exit within {seconds} s:\n" + open(self.log_path).read())
        self.log.close()
        return code, time.time() - start, open(self.log_path).read()


def check_no_worker_left(workers):
    wait_until(lambda: not any(alive(w) for w in workers), 10, "the workers to end")


def check_last_checkpoint(out):
    """Returns the iteration of the complete checkpoint last_checkpoint names."""
    name = open(os.path.join(out, "last_checkpoint")).read().strip()
    path = os.path.join(out, name)
    assert zipfile.is_zipfile(path) and zipfile.ZipFile(path).testzip() is None, path
    print(f"  last_checkpoint: {name}, a complete file")
    return int(name[len("model_"):-len(".pth")])


def same_checkpoints(a, b):
    """Every member of the two checkpoint archives (tensors, optimizer, iteration) byte-equal."""
    za, zb = zipfile.ZipFile(a), zipfile.ZipFile(b)
    names = sorted(za.namelist())
    assert names == sorted(zb.namelist()), (names, zb.namelist())
    differ = [n for n in names if za.read(n) != zb.read(n)]
    print(f"  {len(names) - len(differ)} of {len(names)} archive members identical"
          + (f"; differ: {differ[:5]}" if differ else ""))
    return not differ


def main():
    split = sys.argv.index("--")
    detkit, config, work = sys.argv[1:split]
    overrides = sys.argv[split + 1:]
    shutil.rmtree(work, ignore_errors=True)
    datasets = os.path.join(work, "datasets")
    subprocess.run([detkit, "make-shapes", "--out", os.path.join(datasets, "shapes"), "--train",
                    "8", "--val", "2", "--size", "64x64"], check=True, capture_output=True)
    env = dict(os.environ, DETKIT_DATASETS=datasets)
    for name in ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]:
        env.pop(name, None)

    print("kill-a-rank:")
    run = Launch(detkit, config, os.path.join(work, "kill"), overrides, env, os.path.join(work, "kill.out"))
    workers = run.workers_training()
    os.kill(workers[1], signal.SIGKILL)
    code, seconds, output = run.ending(60)
    message = output.strip().splitlines()[-1]
    print(f"  exit code {code} after {seconds:.1f} s: {message}")
    assert code != 0
    assert f"rank 1 (pid {workers[1]}) was killed by signal 9 (SIGKILL)" in message, output
    check_no_worker_left(workers.values())
    done = check_last_checkpoint(os.path.join(work, "kill"))

    print("sigterm:")
    run = Launch(detkit, config, os.path.join(work, "term"), overrides, env, os.path.join(work, "term.out"))
    workers = run.workers_training()
    run.p.send_signal(signal.SIGTERM)
    code, seconds, output = run.ending(150)
    message = output.strip().splitlines()[-1]
    print(f"  exit code {code} after {seconds:.1f} s: {message}")
    assert code == 75, output
    assert "every rank of this machine stopped after saving a checkpoint (SIGTERM)" in message, output
    check_no_worker_left(workers.values())
    stopped = check_last_checkpoint(os.path.join(work, "term"))
    assert f"training stopped by SIGTERM after iteration {stopped}" in output, output
    assert not [f for f in os.listdir(os.path.join(work, "term")) if ".tmp." in f]

    print("resume after the kill and after the stop, against a run never interrupted:")
    end = ["SOLVER.MAX_ITER", str(max(done, stopped) + 4)]
    for name, extra in [("kill", ["--resume"]), ("term", ["--resume"]), ("whole", [])]:
        run = Launch(detkit, config, os.path.join(work, name), overrides + end, env,
                     os.path.join(work, name + "_end.out"), extra)
        code, seconds, output = run.ending(300)
        assert code == 0, output
    assert f"at iteration {done + 1}" in open(os.path.join(work, "kill", "log.txt")).read()
    assert f"at iteration {stopped + 1}" in open(os.path.join(work, "term", "log.txt")).read()
    for name in ["kill", "term"]:
        assert same_checkpoints(os.path.join(work, name, "model_final.pth"),
                                os.path.join(work, "whole", "model_final.pth"))

    print("launcher-dies:")
    run = Launch(detkit, config, os.path.join(work, "dies"), overrides, env, os.path.join(work, "dies.out"))
    workers = run.workers_training()
    run.p.kill()
    run.ending(10)
    check_no_worker_left(workers.values())
    print("  both workers ended with the launcher")

    print("missing-peer:")
    port = free_port()
    alone = dict(env, RANK="0", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    start = time.time()
    p = subprocess.run([detkit, "train", "--dist-timeout", "3", "--config-file", config,
                        "OUTPUT_DIR", os.path.join(work, "alone")] + overrides,
                       env=alone, capture_output=True, text=True, timeout=60)
    seconds = time.time() - start
    message = p.stderr.strip().splitlines()[-1]
    print(f"  exit code {p.returncode} after {seconds:.1f} s: {message}")
    assert p.returncode != 0 and seconds < 30
    assert f"rank 0 of 2 at 127.0.0.1:{port}: 1 of 2 ranks arrived within 3 s" in message, p.stderr


if __name__ == "__main__":
    main()
