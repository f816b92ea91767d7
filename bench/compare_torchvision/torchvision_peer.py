#!/usr/bin/env python3
"""torchvision's side of bench/compare_torchvision: the same three measurements as
`detkit benchmark` (train, eval, data), with torchvision's Mask R-CNN / Faster R-CNN R50-FPN
(random init) and a torch DataLoader, on a COCO-format dataset made by `detkit make-shapes`;
Keypoint R-CNN trains on its triangle_keypoints files (the triangles' corners).

Prints one JSON object on stdout with the fields `detkit benchmark --json` prints:
images_per_second, seconds_per_iter, data_seconds_per_iter (means over --window) and
peak_rss_mb (this process; compare_torchvision.py adds the peak of the whole process tree, the
DataLoader workers included).

--device cuda: the model on the GPU, each batch copied there (pinned memory, non_blocking) as
part of the step (Detectron2's models copy their inputs in their forward), the clock read only
after torch.cuda.synchronize(), and peak_gpu_mb in the JSON (torch.cuda.max_memory_allocated over
the window's iterations, MiB). --amp there is float16 autocast: O1 with torch.amp.GradScaler
in training (Detectron2's AMPTrainer); O2 trains float16 weights (normalisation layers' kept
float32) through float32 master copies with a static loss scale of 64. On the CPU --amp is
bfloat16 autocast with float32 weights, O1 or O2 alike.

The loader does what torchvision's models need, in the DataLoader's worker processes: decode the
JPEG (PIL), resize as Detectron2's ResizeShortestEdge (PIL bilinear; skipped at scale 1), scale
the boxes, and rasterise each instance's polygons to a full-image mask (PIL ImageDraw) when the
model has a mask head, or scale the (K, 3) keypoints when it has a keypoint head.
"""
import argparse
import collections
import json
import math
import os
import resource
import sys
import time

import numpy as np
import torch
import torchvision
from PIL import Image, ImageDraw


class ShapesCoco(torch.utils.data.Dataset):
    """COCO instances JSON + image folder -> (float RGB image in [0, 1], torchvision target)."""

    def __init__(self, json_file, image_root, min_size, max_size, with_masks, drop_empty,
                 with_keypoints=False):
        with open(json_file) as f:
            coco = json.load(f)
        by_image = collections.defaultdict(list)
        for ann in coco["annotations"]:
            if not ann.get("iscrowd", 0):
                by_image[ann["image_id"]].append(ann)
        categories = sorted(c["id"] for c in coco["categories"])
        self.label_of = {cid: i + 1 for i, cid in enumerate(categories)}  # 0 is background
        self.images = [im for im in coco["images"] if by_image[im["id"]] or not drop_empty]
        self.by_image = by_image
        self.image_root = image_root
        self.min_size, self.max_size = min_size, max_size
        self.with_masks = with_masks
        self.with_keypoints = with_keypoints

    def __len__(self):
        return len(self.images)

    def new_size(self, h, w):
        scale = self.min_size / min(h, w)
        if max(h, w) * scale > self.max_size:
            scale = self.max_size / max(h, w)
        return int(h * scale + 0.5), int(w * scale + 0.5)

    def __getitem__(self, index):
        info = self.images[index]
        image = Image.open(os.path.join(self.image_root, info["file_name"])).convert("RGB")
        w, h = image.size
        nh, nw = self.new_size(h, w)
        if (nh, nw) != (h, w):
            image = image.resize((nw, nh), Image.BILINEAR)
        sx, sy = nw / w, nh / h
        tensor = torch.from_numpy(np.asarray(image)).permute(2, 0, 1).float().div_(255)
        anns = self.by_image[info["id"]]
        boxes = torch.tensor(
            [[a["bbox"][0] * sx, a["bbox"][1] * sy, (a["bbox"][0] + a["bbox"][2]) * sx,
              (a["bbox"][1] + a["bbox"][3]) * sy] for a in anns], dtype=torch.float32).reshape(-1, 4)
        target = {"boxes": boxes,
                  "labels": torch.tensor([self.label_of[a["category_id"]] for a in anns],
                                         dtype=torch.int64)}
        if self.with_masks:
            masks = np.zeros((len(anns), nh, nw), dtype=np.uint8)
            for i, a in enumerate(anns):
                canvas = Image.new("L", (nw, nh), 0)
                draw = ImageDraw.Draw(canvas)
                for poly in a["segmentation"]:
                    xy = [(poly[k] * sx, poly[k + 1] * sy) for k in range(0, len(poly), 2)]
                    draw.polygon(xy, fill=1)
                masks[i] = np.asarray(canvas)
            target["masks"] = torch.from_numpy(masks)
        if self.with_keypoints:  # COCO's flat [x, y, v] * K, scaled with the image
            keypoints = torch.tensor([a["keypoints"] for a in anns], dtype=torch.float32)
            keypoints = keypoints.reshape(len(anns), -1, 3)
            keypoints[:, :, 0] *= sx
            keypoints[:, :, 1] *= sy
            target["keypoints"] = keypoints
        return tensor, target


def collate(batch):
    return tuple(zip(*batch))


def make_loader(args, split, train):
    root = os.path.join(args.dataset_dir, split)
    keypoints = train and args.model == "keypoint"  # the triangles and their corners
    json_file = os.path.join(args.dataset_dir, "annotations",
                             f"triangle_keypoints_{split}.json" if keypoints
                             else f"instances_{split}.json")
    dataset = ShapesCoco(json_file, root, args.min_size, args.max_size,
                         with_masks=train and args.model == "mask", drop_empty=train,
                         with_keypoints=keypoints)
    if train:
        generator = torch.Generator().manual_seed(args.seed)
        sampler = torch.utils.data.RandomSampler(
            dataset, replacement=True, num_samples=(args.iters + 1) * args.batch,
            generator=generator)
        return torch.utils.data.DataLoader(dataset, batch_size=args.batch, sampler=sampler,
                                           num_workers=args.workers, collate_fn=collate,
                                           pin_memory=cuda(args))
    return torch.utils.data.DataLoader(dataset, batch_size=1, shuffle=False,
                                       num_workers=args.workers, collate_fn=collate,
                                       pin_memory=cuda(args))


def build_model(args):
    if args.model == "retinanet":  # its own defaults: score 0.05, 1000 candidates per level
        return torchvision.models.detection.retinanet_resnet50_fpn(
            weights=None, weights_backbone=None, num_classes=args.num_classes + 1,
            min_size=args.min_size, max_size=args.max_size, detections_per_img=100)
    build = {"mask": torchvision.models.detection.maskrcnn_resnet50_fpn,
             "faster": torchvision.models.detection.fasterrcnn_resnet50_fpn,
             "keypoint": torchvision.models.detection.keypointrcnn_resnet50_fpn}[args.model]
    extra = {"num_keypoints": args.num_keypoints} if args.model == "keypoint" else {}
    return build(weights=None, weights_backbone=None, num_classes=args.num_classes + 1,
                 min_size=args.min_size, max_size=args.max_size, box_score_thresh=0.0,
                 box_detections_per_img=100, **extra)


def enable_cpu_autocast_rules():
    """torchvision 0.14 registers autocast kernels for its ops on CUDA only: under CPU autocast a
    bfloat16 feature map reaches nms and roi_align, whose CPU kernels refuse it ("nms_kernel not
    implemented for 'BFloat16'"). These are its CUDA rules (compute in fp32; roi_align returns its
    input's dtype), registered for AutocastCPU, the least a peer needs to run under autocast."""
    ops = torch.ops.torchvision
    lib = torch.library.Library("torchvision", "IMPL", "AutocastCPU")

    def nms(boxes, scores, iou_threshold):
        with torch.autocast("cpu", enabled=False):
            return ops.nms(boxes.float(), scores.float(), iou_threshold)

    def roi_align(x, rois, scale, height, width, sampling_ratio, aligned):
        with torch.autocast("cpu", enabled=False):
            return ops.roi_align(x.float(), rois.float(), scale, height, width, sampling_ratio,
                                 aligned).to(x.dtype)

    lib.impl("nms", nms)
    lib.impl("roi_align", roi_align)
    return lib  # kept alive: the registrations end with it


def autocast(args):
    if args.device == "cuda":
        return torch.autocast("cuda", dtype=torch.float16, enabled=bool(args.amp))
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(args.amp))


def cuda(args):
    return args.device == "cuda"


def sync(args):
    """Waits for the GPU's queued work, so that the clock read next covers it."""
    if cuda(args):
        torch.cuda.synchronize()


def to_device(args, images, targets=None):
    """A batch on the model's device (the CPU: as it is)."""
    if not cuda(args):
        return images, targets
    images = [image.to("cuda", non_blocking=True) for image in images]
    if targets is not None:
        targets = [{k: v.to("cuda", non_blocking=True) for k, v in t.items()} for t in targets]
    return images, targets


def start_gpu_window(args):
    if cuda(args):
        torch.cuda.reset_peak_memory_stats()


def end_gpu_window(args):
    if cuda(args):
        args.peak_gpu_mb = torch.cuda.max_memory_allocated() / 2**20


NORM_LAYERS = (torch.nn.modules.batchnorm._NormBase, torch.nn.GroupNorm, torch.nn.LayerNorm,
               torchvision.ops.FrozenBatchNorm2d)


class MasterWeights:
    """--amp O2 on cuda: the trained weights in float16 except those of normalisation layers,
    float32 master copies of them in the optimizer, a static loss scale (a step whose gradients
    hold an inf or NaN is skipped, the scale kept)."""

    def __init__(self, model, scale=64.0, dtype=torch.float16):
        for module in model.modules():
            if not isinstance(module, NORM_LAYERS):
                for p in module.parameters(recurse=False):
                    p.data = p.data.to(dtype)
        self.scale = scale
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.masters = [p if p.dtype == torch.float32 else
                        p.detach().float().requires_grad_() for p in self.params]
        self.low = [(p, m) for p, m in zip(self.params, self.masters) if m is not p]
        self.skipped = 0

    def backward_and_step(self, total, optimizer):
        (total * self.scale).backward()
        grads = []
        for p, m in zip(self.params, self.masters):
            if p.grad is None:
                continue
            if m is not p:
                m.grad = p.grad.float()
                p.grad = None
            grads.append(m.grad)
        found_inf = torch.zeros(1, device=grads[0].device)
        inv_scale = torch.full((1,), 1.0 / self.scale, device=grads[0].device)
        torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
        if found_inf.item():
            self.skipped += 1
            return
        optimizer.step()
        with torch.no_grad():
            torch._foreach_copy_([p for p, _ in self.low], [m for _, m in self.low])


def run_train(args, times, data_times):
    model = build_model(args)
    model.train()
    master = scaler = None
    if cuda(args):
        model.to("cuda")
        if args.amp == "O2":
            master = MasterWeights(model)
        elif args.amp:
            scaler = torch.amp.GradScaler("cuda")
    params = master.masters if master else [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=args.lr, momentum=0.9, weight_decay=1e-4)
    batches = iter(make_loader(args, "train", train=True))
    begin, end = window(args)
    profiler = None
    sync(args)
    last = time.perf_counter()
    for i in range(args.iters):
        if i == begin:
            start_gpu_window(args)
        if args.profile and i == begin:
            profiler = torch.autograd.profiler.profile()
            profiler.__enter__()
            sync(args)
            last = time.perf_counter()
        start = time.perf_counter()
        images, targets = next(batches)
        fetched = time.perf_counter()
        images, targets = to_device(args, images, targets)
        if i < args.warmup_iters:  # Detectron2's linear warm-up from 0.001 x the LR
            alpha = i / args.warmup_iters
            for group in optimizer.param_groups:
                group["lr"] = args.lr * (0.001 * (1 - alpha) + alpha)
        elif i == args.warmup_iters:
            for group in optimizer.param_groups:
                group["lr"] = args.lr
        with autocast(args):
            losses = model(list(images), list(targets))
        total = sum(losses.values())
        values = {k: v.item() for k, v in losses.items()}  # what a trainer logs
        if not math.isfinite(total.item()):
            sys.exit(f"loss became infinite or NaN at iteration {i}: {values}")
        optimizer.zero_grad()
        if master:
            master.backward_and_step(total, optimizer)
        elif scaler:
            scaler.scale(total).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            total.backward()
            optimizer.step()
        sync(args)
        now = time.perf_counter()
        times.append(now - last)
        data_times.append(fetched - start)
        if i == end - 1:
            end_gpu_window(args)
        log(args, i, times, data_times)
        if profiler and i == end - 1:
            stop_profile(profiler, args.profile)
            profiler = None
        last = time.perf_counter()
    if master:
        args.skipped_steps = master.skipped


def run_eval(args, times, data_times):
    model = build_model(args)
    model.eval()
    if cuda(args):
        model.to("cuda")
    with torch.inference_mode():
        loader = make_loader(args, "val", train=False)
        images = iter(loader)
        begin, end = window(args)
        profiler = None
        for i in range(args.iters):
            if args.profile and i == begin:
                profiler = torch.autograd.profiler.profile()
                profiler.__enter__()
            if profiler and i == end:
                stop_profile(profiler, args.profile)
                profiler = None
            if i == begin:
                start_gpu_window(args)
            start = time.perf_counter()
            try:
                image, _ = next(images)
            except StopIteration:  # a new pass; starting the loader is not the model's time
                images = iter(loader)
                start = time.perf_counter()
                image, _ = next(images)
            fetched = time.perf_counter()
            image, _ = to_device(args, image)
            with autocast(args):
                model(list(image))
            sync(args)
            times.append(time.perf_counter() - start)
            data_times.append(fetched - start)
            if i == end - 1:
                end_gpu_window(args)
            log(args, i, times, data_times)
        if profiler:
            stop_profile(profiler, args.profile)


def run_data(args, times, data_times):
    batches = iter(make_loader(args, "train", train=True))
    start_gpu_window(args)  # no GPU work: the loader's pinned batches are host memory
    for i in range(args.iters):
        start = time.perf_counter()
        next(batches)
        times.append(time.perf_counter() - start)
        data_times.append(times[-1])
        log(args, i, times, data_times)


def stop_profile(profiler, path):
    profiler.__exit__(None, None, None)
    profiler.export_chrome_trace(path)


def window(args):
    return tuple(int(x) for x in args.window.split(":"))


def log(args, i, times, data_times):
    print(f"torchvision {args.task} iteration {i} of 0..{args.iters - 1}: {times[-1]:.4f} s "
          f"(data {data_times[-1]:.4f} s)", file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=["train", "eval", "data"], required=True)
    parser.add_argument("--model", choices=["mask", "faster", "retinanet", "keypoint"], default="mask")
    parser.add_argument("--dataset-dir", required=True,
                        help="made by detkit make-shapes: annotations/, train/, val/")
    parser.add_argument("--iters", type=int, required=True)
    parser.add_argument("--window", required=True, help="A:B, iterations A..B-1 are averaged")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--num-classes", type=int, default=3)
    parser.add_argument("--num-keypoints", type=int, default=17, help="Keypoint R-CNN's K")
    parser.add_argument("--min-size", type=int, default=384)
    parser.add_argument("--max-size", type=int, default=512)
    parser.add_argument("--lr", type=float, default=0.002)
    parser.add_argument("--warmup-iters", type=int, default=0,
                        help="train: Detectron2's linear warm-up (factor 0.001) over these iterations")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", help="train, eval: write a Chrome trace of the window's iterations")
    parser.add_argument("--amp", nargs="?", const="O1", choices=["O1", "O2"],
                        help="train, eval: forward and losses under autocast: on the CPU "
                             "torch.autocast('cpu', bfloat16), fp32 weights (O1 and O2 alike); on "
                             "cuda float16, O1 with GradScaler, O2 (training) float16 weights with "
                             "fp32 masters and a static loss scale of 64 (O1 when not given)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cuda: the model and the batches on the GPU, synchronised timing, "
                             "peak_gpu_mb in the JSON")
    parser.add_argument("--flush-denormal", action="store_true",
                        help="torch.set_flush_denormal(True) first (detkit's FLUSH_DENORMAL default; "
                             "PyTorch's is off)")
    args = parser.parse_args()
    if cuda(args) and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA device visible")
    rules = enable_cpu_autocast_rules() if args.amp and not cuda(args) else None  # noqa: F841
    begin, end = window(args)
    if not 0 <= begin < end <= args.iters:
        sys.exit(f"--window {args.window} must satisfy 0 <= A < B <= --iters {args.iters}")
    if args.flush_denormal and not torch.set_flush_denormal(True):
        sys.exit("--flush-denormal: this CPU has no flush-to-zero mode")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    times, data_times = [], []
    args.peak_gpu_mb, args.skipped_steps = 0.0, 0
    {"train": run_train, "eval": run_eval, "data": run_data}[args.task](args, times, data_times)
    per_iter = sum(times[begin:end]) / (end - begin)
    images_per_iter = args.batch if args.task != "eval" else 1
    extra = {}
    if cuda(args):
        extra = {"peak_gpu_mb": args.peak_gpu_mb, "gpu_name": torch.cuda.get_device_name(0),
                 "amp_opt_level": args.amp, "skipped_steps": args.skipped_steps}
    print(json.dumps({
        "task": args.task,
        "iterations": args.iters,
        "window": [begin, end],
        "images_per_iter": images_per_iter,
        "images_per_second": images_per_iter / per_iter,
        "seconds_per_iter": per_iter,
        "data_seconds_per_iter": sum(data_times[begin:end]) / (end - begin),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "num_threads": torch.get_num_threads(),
        "num_workers": args.workers,
        "amp": bool(args.amp),
        "device": args.device,
        **extra,
        "iter_seconds": times,
        "data_seconds": data_times,
    }))


if __name__ == "__main__":
    main()
