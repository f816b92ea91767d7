"""Detectron2's own unit tests, renamed to detkit, run against detkit's Python package.

Issue 53's measure: Detectron2's `tests/` folder at a commit, with every `detectron2` replaced by
`detkit` and nothing else changed, run file by file with unittest (Detectron2's tests are
unittest.TestCase classes); per file the counts of passed, failed, errored and skipped test
methods, and for each test that did not pass its first line of error. Files out of the issue's
scope (Caffe2 export, LazyConfig / instantiate, rotated boxes, tracking) are listed apart and not
run. Detectron2's tests are not committed here: they are read from a Detectron2 checkout.

  PYTHONPATH=build/python python tools/detectron2_tests/run_renamed.py \
      --detectron2 PATH_TO_DETECTRON2_CHECKOUT_OR_BARE_GIT [--commit 02b5c4e] [--json OUT.json]

A bare git directory (as `fetch` brings) is read with `git archive`; a checkout is copied.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

OUT_OF_SCOPE = (
    (re.compile(r"test_export_caffe2\.py$"), "Caffe2 export"),
    (re.compile(r"config/test_(lazy|instantiate)_config\.py$"), "LazyConfig / instantiate"),
    (re.compile(r"config/(dir1|root_cfg)"), "LazyConfig / instantiate"),
    (re.compile(r"rotated"), "rotated boxes"),
    (re.compile(r"^tests/tracking/"), "tracking"),
)

# One test file in a child process: its own interpreter, so a crash or a hang in one file cannot
# stop the others; the child prints one JSON line with each test method's outcome.
CHILD = r'''
import json, sys, traceback, unittest
path, root = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
outcomes = {}
class Recorder(unittest.TextTestResult):
    def addSuccess(self, test):
        super().addSuccess(test); outcomes[test.id()] = ["passed", ""]
    def _bad(self, kind, test, err):
        text = "".join(traceback.format_exception_only(err[0], err[1]))
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        outcomes[test.id()] = [kind, lines[-1][:300] if lines else kind]
    def addFailure(self, test, err):
        super().addFailure(test, err); self._bad("failed", test, err)
    def addError(self, test, err):
        super().addError(test, err); self._bad("error", test, err)
    def addSkip(self, test, reason):
        super().addSkip(test, reason); outcomes[test.id()] = ["skipped", str(reason)[:300]]
    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err); outcomes[test.id()] = ["passed", "expected failure"]
    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test); outcomes[test.id()] = ["failed", "unexpected success"]
module = path[len(root) + 1:-3].replace("/", ".")
try:
    suite = unittest.defaultTestLoader.loadTestsFromName(module)
except Exception as e:  # the file does not import: every method of it is lost
    lines = traceback.format_exception_only(type(e), e)
    print("DETKIT_RESULT " + json.dumps({"import_error": lines[-1].strip()[:300]}))
    sys.exit(0)
runner = unittest.TextTestRunner(stream=open("/dev/null", "w"), resultclass=Recorder)
runner.run(suite)
failed_imports = [line for test, (kind, line) in outcomes.items()
                  if test.startswith("unittest.loader._FailedTest")]
if failed_imports:  # unittest turns a module that does not import into one failing test
    print("DETKIT_RESULT " + json.dumps({"import_error": failed_imports[0]}))
else:
    print("DETKIT_RESULT " + json.dumps({"outcomes": outcomes}))
'''


def export_tests(detectron2, commit, into):
    if os.path.isdir(os.path.join(detectron2, "tests")):
        shutil.copytree(os.path.join(detectron2, "tests"), os.path.join(into, "tests"))
        return
    archive = subprocess.run(["git", "-C", detectron2, "archive", commit, "tests"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)


def rename(root):
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py") or name.endswith(".yaml"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text.replace("detectron2", "detkit"))


def scope(relative):
    for pattern, why in OUT_OF_SCOPE:
        if pattern.search(relative):
            return why
    return None


def run_file(path, root, timeout):
    env = dict(os.environ)  # the child runs in the copy's root: PYTHONPATH made absolute
    env["PYTHONPATH"] = os.pathsep.join(
        os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, path, root], capture_output=True,
                              text=True, timeout=timeout, cwd=root, env=env)
    except subprocess.TimeoutExpired:
        return {"crash": f"did not finish in {timeout} s"}
    for line in done.stdout.splitlines():
        if line.startswith("DETKIT_RESULT "):
            return json.loads(line[len("DETKIT_RESULT "):])
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"crash": f"exit {done.returncode}: {tail[:300]}"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--detectron2", required=True,
                        help="a Detectron2 checkout or bare git directory")
    parser.add_argument("--commit", default="HEAD", help="for a bare git directory (default HEAD)")
    parser.add_argument("--only", default="", help="run only files whose path contains this")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per file")
    parser.add_argument("--json", help="write every test's outcome here")
    parser.add_argument("--verbose", action="store_true", help="list every test that did not pass")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="detkit_d2_tests_")
    try:
        export_tests(args.detectron2, args.commit, work)
        rename(work)
        files = sorted(os.path.relpath(os.path.join(folder, name), work)
                       for folder, _, names in os.walk(os.path.join(work, "tests"))
                       for name in names if name.startswith("test_") and name.endswith(".py"))
        report, totals = {}, {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
        print(f"{'file':52} {'passed':>6} {'failed':>6} {'error':>6} {'skipped':>7}")
        for relative in files:
            why = scope(relative)
            if why:
                report[relative] = {"out_of_scope": why}
                continue
            if args.only and args.only not in relative:
                continue
            result = run_file(os.path.join(work, relative), work, args.timeout)
            report[relative] = result
            counts = {k: 0 for k in totals}
            for outcome, _ in result.get("outcomes", {}).values():
                counts[outcome] += 1
                totals[outcome] += 1
            problem = result.get("import_error") or result.get("crash")
            print(f"{relative:52} {counts['passed']:6} {counts['failed']:6} {counts['error']:6} "
                  f"{counts['skipped']:7}" + (f"  ({problem})" if problem else ""))
            if args.verbose:
                for test, (outcome, line) in sorted(result.get("outcomes", {}).items()):
                    if outcome != "passed":
                        print(f"    {outcome:8} {test.split('.', 2)[-1]}: {line}")
        print(f"{'in scope, all files':52} {totals['passed']:6} {totals['failed']:6} "
              f"{totals['error']:6} {totals['skipped']:7}")
        for relative, result in report.items():
            if "out_of_scope" in result:
                print(f"not run ({result['out_of_scope']}): {relative}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1, sort_keys=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
