"""Detectron2's COCOeval_opt (detectron2.evaluation.fast_eval_api): pycocotools' COCOeval whose
per-image matching (evaluateImg) and accumulate() run in detkit's C++ COCOeval, the one detkit's
COCOEvaluator scores with. pycocotools prepares the annotations and computes the IoUs in Python
as it always does (so a malformed annotation raises what pycocotools raises); only ids, areas,
scores, flags and the IoU matrices cross. Needs pycocotools (imported here, not by detkit)."""
import copy
import datetime
import logging
import time

import numpy as np
from pycocotools.cocoeval import COCOeval

from .. import _C

__all__ = ["COCOeval_opt"]


class COCOeval_opt(COCOeval):
    """pycocotools' COCOeval with evaluate() and accumulate() in C++ (self.evalImgs stays None)."""

    def evaluate(self):
        start = time.time()
        p = self.params
        if p.useSegm is not None:
            p.iouType = "segm" if p.useSegm == 1 else "bbox"
        p.imgIds = list(np.unique(p.imgIds))
        if p.useCats:
            p.catIds = list(np.unique(p.catIds))
        p.maxDets = sorted(p.maxDets)
        self._prepare()
        cat_ids = p.catIds if p.useCats else [-1]
        compute = self.computeOks if p.iouType == "keypoints" else self.computeIoU
        self.ious = {(i, c): compute(i, c) for i in p.imgIds for c in cat_ids}
        p.maxDets[-1]  # pycocotools' evaluate reads it: an empty maxDets is its IndexError

        keypoints = p.iouType == "keypoints"
        gts, dts = [], []
        for image_id in p.imgIds:
            for cat_id in p.catIds:
                for g in self._gts[image_id, cat_id]:
                    crowd = int(g["iscrowd"])
                    # _prepare's "ignore": crowd, or (keypoints) no labelled keypoint.
                    unlabelled = keypoints and bool(g["ignore"]) and not crowd
                    gts.append((int(g["id"]), int(g["image_id"]), int(g["category_id"]),
                                float(g["area"]), bool(crowd), 0 if unlabelled else 1))
                for d in self._dts[image_id, cat_id]:
                    dts.append((int(d["id"]), int(d["image_id"]), int(d["category_id"]),
                                float(d["score"]), float(d["area"])))
        ious = {key: np.asarray(value, dtype=np.float64) for key, value in self.ious.items()
                if len(value)}
        self._native = _C.COCOevalPrepared(
            gts, dts, [int(i) for i in p.imgIds], [int(c) for c in p.catIds], p.iouType,
            [float(t) for t in p.iouThrs], [float(r) for r in p.recThrs],
            [int(m) for m in p.maxDets], [[float(lo), float(hi)] for lo, hi in p.areaRng],
            list(p.areaRngLbl), bool(p.useCats), ious)
        self._native.evaluate()
        self.evalImgs = None
        self._paramsEval = copy.deepcopy(p)
        logging.getLogger(__name__).info(
            f"COCOeval_opt.evaluate() finished in {time.time() - start:0.2f} seconds.")

    def accumulate(self, p=None):
        """pycocotools' self.eval (precision, recall, scores, counts) from detkit's accumulate;
        p is not taken: the parameters are evaluate()'s."""
        if not hasattr(self, "_native"):
            raise RuntimeError("COCOeval_opt: evaluate() must be called before accumulate()")
        if p is not None:
            raise ValueError("COCOeval_opt.accumulate() uses evaluate()'s parameters; p is not "
                             "taken")
        start = time.time()
        self._native.accumulate()
        precision, recall, scores = self._native.arrays()
        self.eval = {
            "params": self._paramsEval,
            "counts": list(self._native.counts()),
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
            "precision": precision,
            "recall": recall,
            "scores": scores,
        }
        logging.getLogger(__name__).info(
            f"COCOeval_opt.accumulate() finished in {time.time() - start:0.2f} seconds.")
