#!/usr/bin/env python3
"""detkit's progress on a terminal and in a pipe: `detkit make-shapes` with stderr on a
pseudo-terminal shows "Generating shapes/train: ..." on one status line rewritten in place
(carriage return + erase-line, no newline) and clears it before its last output; with stderr on
a pipe the same run prints no status line at all.

usage: check_status_line.py DETKIT OUT_DIR
"""
import os
import pty
import subprocess
import sys

ERASE = b"\r\x1b[K"


def run(detkit, out, on_terminal):
    args = [detkit, "make-shapes", "--out", out, "--train", "300", "--val", "0",
            "--size", "320x320", "--workers", "1"]
    if not on_terminal:
        done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        return done.returncode, done.stderr
    master, slave = pty.openpty()
    child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, env=dict(os.environ, TERM="xterm"))
    os.close(slave)
    output = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        output += chunk
    os.close(master)
    return child.wait(timeout=300), output


def main():
    detkit, out = sys.argv[1], sys.argv[2]
    try:
        for fd in os.openpty():
            os.close(fd)
    except OSError as e:  # no /dev/ptmx in this container: nothing to show a status line on
        print(f"[ skipped ] no pseudo-terminal can be opened here: {e}")
        sys.exit(77)
    code, terminal = run(detkit, out + "/tty", on_terminal=True)
    assert code == 0, terminal
    shown = terminal.count(ERASE)
    print(f"terminal: {len(terminal)} bytes, {shown} redraws of the status line")
    assert b"Generating shapes/train: " in terminal, terminal[-400:]
    assert shown >= 2, terminal[-400:]
    # Never a newline inside a status line: each redraw runs up to the next erase.
    for piece in terminal.split(ERASE)[1:-1]:
        if piece.startswith(b"Generating"):
            assert b"\n" not in piece, piece
    # The status line is cleared at the end: nothing of it after the last erase.
    assert b"Generating" not in terminal.split(ERASE)[-1], terminal[-400:]
    code, piped = run(detkit, out + "/pipe", on_terminal=False)
    assert code == 0, piped
    print(f"pipe: {len(piped)} bytes of stderr, status line codes: {piped.count(ERASE)}")
    assert ERASE not in piped and b"\r" not in piped, piped
    print("ok")


if __name__ == "__main__":
    main()
