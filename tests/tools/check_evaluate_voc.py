#!/usr/bin/env python3
"""check_evaluate_voc.py DETKIT FIXTURE_DIR RESULTS_DIR: runs `detkit evaluate --voc-dir
FIXTURE_DIR/VOC2007 --split test --results FIXTURE_DIR/RESULTS_DIR --json` with the default
metric (VOC2007: 11-point) and with --voc-metric area, and compares AP, AP50, AP75 with
Detectron2's PascalVOCDetectionEvaluator numbers in FIXTURE_DIR/expected_s1.json (to 1e-9).

check_evaluate_voc.py DETKIT FIXTURE_DIR --bad-input: the named errors of a results file of an
unknown class, a malformed XML, an image listed twice and a missing annotation file (copies of
the fixture in a temp dir), each exiting non-zero with the file in its message."""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def evaluate(detkit, voc_dir, results, *extra):
    return subprocess.run([detkit, "evaluate", "--voc-dir", voc_dir, "--split", "test",
                           "--results", results, *extra], capture_output=True, text=True)


def check_numbers(detkit, fixtures, results_dir):
    expected = json.load(open(f"{fixtures}/expected_s1.json"))
    case = next(c for c in expected["cases"] if c["results_dir"] == results_dir)
    diffs = []
    for metric, extra in (("voc2007_11point", []), ("area", ["--voc-metric", "area"])):
        run = evaluate(detkit, f"{fixtures}/VOC2007", f"{fixtures}/{results_dir}", "--json", *extra)
        assert run.returncode == 0, run.stderr
        got = json.loads(run.stdout)
        want = case["detectron2_pascal_voc_evaluator"][metric]
        assert set(got) == {"bbox"} and set(got["bbox"]) == {"AP", "AP50", "AP75"}, got
        diffs += [abs(got["bbox"][k] - want["bbox"][k]) for k in ("AP", "AP50", "AP75")]
        print(f"{results_dir} {metric}: {got['bbox']}")
    print(f"{results_dir}: max |diff| to Detectron2 {max(diffs):.3g}")
    assert max(diffs) < 1e-9


def expect_error(run, *parts):
    assert run.returncode != 0, f"expected failure, got success: {run.stdout}"
    for part in parts:
        assert part in run.stderr, f"'{part}' not in: {run.stderr}"
    print(run.stderr.strip())


def check_bad_input(detkit, fixtures):
    with tempfile.TemporaryDirectory(prefix="detkit_voc_cli_") as tmp:
        results = f"{tmp}/results"
        shutil.copytree(f"{fixtures}/results_easy_s1", results)
        voc = f"{tmp}/VOC2007"
        shutil.copytree(f"{fixtures}/VOC2007", voc)
        # A results file of a class that is not one of the 20.
        open(f"{results}/unicorn.txt", "w").write("000000005001 0.5 1 1 10 10")
        expect_error(evaluate(detkit, voc, results), f"{results}/unicorn.txt",
                     "'unicorn' is not one of the 20 Pascal VOC classes")
        os.remove(f"{results}/unicorn.txt")
        # A detection of an image outside the split.
        open(f"{results}/dog.txt", "a").write("\nnot_an_image 0.5 1 1 10 10")
        expect_error(evaluate(detkit, voc, results), f"{results}/dog.txt:",
                     "image 'not_an_image' is not in the ground truth's split")
        shutil.copy(f"{fixtures}/results_easy_s1/dog.txt", f"{results}/dog.txt")
        # A malformed XML.
        xml = f"{voc}/Annotations/000000005001.xml"
        text = open(xml).read()
        open(xml, "w").write(text.replace("</size>", "", 1))
        expect_error(evaluate(detkit, voc, results), xml, "malformed XML")
        # A missing annotation file.
        os.remove(xml)
        expect_error(evaluate(detkit, voc, results), xml, "does not exist")
        open(xml, "w").write(text)
        # An image listed twice.
        split = f"{voc}/ImageSets/Main/test.txt"
        stems = open(split).read().split()
        open(split, "w").write("\n".join(stems + [stems[3]]) + "\n")
        expect_error(evaluate(detkit, voc, results), split,
                     f"image '{stems[3]}' is listed twice (first on line 4)")
        open(split, "w").write("\n".join(stems) + "\n")
        # A folder not named VOC<year> needs --voc-metric.
        os.rename(voc, f"{tmp}/mine")
        expect_error(evaluate(detkit, f"{tmp}/mine", results), "--voc-metric")
        run = evaluate(detkit, f"{tmp}/mine", results, "--voc-metric", "area")
        assert run.returncode == 0, run.stderr


if __name__ == "__main__":
    detkit, fixtures = sys.argv[1], sys.argv[2]
    if sys.argv[3] == "--bad-input":
        check_bad_input(detkit, fixtures)
    else:
        check_numbers(detkit, fixtures, sys.argv[3])
