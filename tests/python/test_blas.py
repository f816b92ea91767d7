#!/usr/bin/env python3
"""`import detkit` gives the Python process the OpenBLAS kernels the CLI gets. Where OpenBLAS
picked its generic ones for a CPU it does not know (Intel Emerald Rapids under Debian's 0.3.21),
the CLI starts itself again with OPENBLAS_CORETYPE; a Python process cannot, so detkit switches
the loaded OpenBLAS in place. Simulated here on any AVX2 / AVX-512 CPU: a child process starts
with OPENBLAS_CORETYPE=Prescott (OpenBLAS reads it when numpy loads it), forgets the variable,
then imports detkit. Usage: test_blas.py SHARED SOURCE DETKIT"""
import os
import subprocess
import sys

CHILD = r"""
import os, time
import numpy  # loads OpenBLAS, which reads OPENBLAS_CORETYPE=Prescott
del os.environ["OPENBLAS_CORETYPE"]  # as if OpenBLAS had chosen Prescott itself
import torch
a, b = torch.randn(512, 4096), torch.randn(4096, 512)
exact = a.double() @ b.double()
import detkit, detkit._C
print(detkit._C.blas_report())
print("environment after:", os.environ.get("OPENBLAS_CORETYPE", "unset"))
print("max difference of a 512x4096x512 product from float64:",
      (torch.mm(a, b).double() - exact).abs().max().item())
"""


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


flags = cpu_flags()
if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
    expected = "SkylakeX"
elif {"avx2", "fma"} <= flags:
    expected = "Haswell"
else:
    print("skipped: this CPU has neither AVX2 + FMA nor AVX-512: no kernels better than Prescott")
    sys.exit(77)

child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                       env={**os.environ, "OPENBLAS_CORETYPE": "Prescott"}, timeout=120)
print(child.stdout, child.stderr, sep="")
assert child.returncode == 0, f"the child failed ({child.returncode})"
report, environment, difference = child.stdout.strip().splitlines()[-3:]
if "not OpenBLAS" in report:
    print("skipped: libtorch's BLAS here is not OpenBLAS")
    sys.exit(77)
assert f"kernels {expected} (switched by detkit in this process: OpenBLAS picked its generic " \
       "Prescott kernels" in report, report
# Programs the process starts choose their own kernels.
assert environment == "environment after: unset", environment
assert float(difference.rsplit(" ", 1)[1]) < 1e-2, difference

# Where OpenBLAS chose, or the user did, nothing changes.
kept = subprocess.run([sys.executable, "-c", "import detkit._C; print(detkit._C.blas_report())"],
                      capture_output=True, text=True, env={**os.environ, "OPENBLAS_CORETYPE":
                                                            "Prescott"}, timeout=120)
print(kept.stdout, end="")
assert "kernels Prescott (OPENBLAS_CORETYPE=Prescott set by the user: kept)" in kept.stdout, \
    kept.stdout + kept.stderr

# Kernels narrower than the CPU's, set by the user: kept, and `import detkit` warns as the CLI does.
warned = subprocess.run([sys.executable, "-c", "import detkit"], capture_output=True, text=True,
                        env={**os.environ, "OPENBLAS_CORETYPE": "Prescott"}, timeout=120)
assert warned.returncode == 0, warned.stderr
assert "RuntimeWarning: OPENBLAS_CORETYPE=Prescott (set in the environment; detkit keeps it) " \
       "runs OpenBLAS's Prescott kernels (SSE)" in warned.stderr, warned.stderr
quiet = subprocess.run([sys.executable, "-c", "import detkit"], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"},
                       timeout=120)
assert quiet.returncode == 0 and "OPENBLAS_CORETYPE" not in quiet.stderr, quiet.stderr
print(warned.stderr, end="")
