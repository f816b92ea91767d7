"""detkit.data's torch data loading from Python (Detectron2's data/common.py, samplers, build.py,
datasets/coco.py) and detkit.config.instantiate: the samplers' index streams against the same
draws made by hand from a torch.Generator with the same seed, repeat factors against LVIS's
formula, InferenceSampler's shards and GroupedBatchSampler's batches against plain loops, the
loaders' batches, load_coco_json on coco_tiny's val file field by field against a direct json
read, RLE areas against numpy masks, convert_to_coco_dict's areas against the shoelace formula and
the round trip, instantiate against direct calls; the errors.
Usage: test_data_loading.py SHARED SOURCE DETKIT."""
import atexit
import copy
import dataclasses
import fractions
import itertools
import json
import math
import os
import pickle
import shutil
import sys
import tempfile
import types

import numpy as np
import torch

from checks import check, finish, raises
from detkit.config import get_cfg, instantiate
from detkit.config.instantiate import dump_dataclass
from detkit.data import (DatasetCatalog, DatasetFromList, MapDataset, MetadataCatalog,
                         ToIterableDataset, build_batch_data_loader, build_detection_test_loader,
                         build_detection_train_loader, get_detection_dataset_dicts)
from detkit.data.common import AspectRatioGroupedDataset
from detkit.data.datasets import register_coco_instances
import detkit
from detkit import _C
from detkit.data.datasets.coco import convert_to_coco_dict, convert_to_coco_json, load_coco_json
from detkit.data.samplers import (GroupedBatchSampler, InferenceSampler,
                                  RandomSubsetTrainingSampler, RepeatFactorTrainingSampler,
                                  TrainingSampler)
from detkit.evaluation import COCOEvaluator, inference_on_dataset
from detkit.structures import BoxMode

shared = sys.argv[1] if len(sys.argv) > 1 else "/work/shared"
val_json = os.path.join(shared, "data/coco_tiny/annotations/instances_val2017.json")
if not os.path.exists(val_json):
    print(f"skipped: {val_json} is absent")
    sys.exit(77)
rng = np.random.default_rng(0)

# --- DatasetFromList / MapDataset ---
items = [{"id": k, "values": rng.random(k % 5).tolist(), "name": f"item{k}"} for k in range(50)]
ds = DatasetFromList(items)
check(len(ds) == 50 and all(ds[k] == items[k] for k in range(50)),
      "DatasetFromList serialized: the 50 dicts read back equal")
ds[3]["name"] = "changed"
check(ds[3]["name"] == "item3", "DatasetFromList serialized: a read item is a fresh object")
plain = DatasetFromList(items, copy=True, serialize=False)
plain[4]["name"] = "changed"
check(items[4]["name"] == "item4", "DatasetFromList(copy=True, serialize=False) deep-copies")
shared_list = DatasetFromList(items, copy=False, serialize=False)
check(shared_list[5] is items[5], "DatasetFromList(copy=False, serialize=False) gives the item")
check(DatasetFromList([1, 2, 3], serialize=torch.tensor)[2] == torch.tensor(3),
      "DatasetFromList(serialize=callable) stores callable(list)")
raises(TypeError, lambda: DatasetFromList([1], serialize=3), "serialize")


def odd_to_none(x):
    return None if x % 2 else x * 10


mapped = MapDataset(DatasetFromList(list(range(20))), odd_to_none)
values = [mapped[k] for k in range(20)]
check(all(values[k] == 10 * k for k in range(0, 20, 2)) and
      all(v is not None and v % 20 == 0 for v in values),
      "MapDataset: an index mapped to None is retried with another (even) index")
raises(RuntimeError, lambda: MapDataset(DatasetFromList([1, 3]), odd_to_none)[0], "None")
offset = 7
restored = pickle.loads(pickle.dumps(MapDataset(DatasetFromList([1, 2]), lambda x: x + offset)))
check(restored[1] == 9, f"MapDataset with a closure lambda pickles: {restored[1]} == 9")


class Stream(torch.utils.data.IterableDataset):
    def __iter__(self):
        yield from range(7)


check(list(MapDataset(Stream(), odd_to_none)) == [0, 20, 40, 60],
      "MapDataset over an IterableDataset skips the None")

# --- samplers against the same draws by hand ---
def permutations(size, seed, count):
    g = torch.Generator()
    g.manual_seed(seed)
    return list(itertools.chain.from_iterable(torch.randperm(size, generator=g).tolist()
                                              for _ in range(count)))


check(list(itertools.islice(TrainingSampler(13, seed=5), 39)) == permutations(13, 5, 3),
      "TrainingSampler(13, seed=5): 39 indices == 3 seeded randperms")
check(list(itertools.islice(TrainingSampler(4, shuffle=False, seed=1), 10)) ==
      [0, 1, 2, 3, 0, 1, 2, 3, 0, 1], "TrainingSampler(shuffle=False): range repeated")
raises(ValueError, lambda: TrainingSampler(0), "positive")
raises(TypeError, lambda: TrainingSampler(3.0), "int")

subset = RandomSubsetTrainingSampler(20, 0.25, seed_shuffle=3, seed_subset=4)
g = torch.Generator()
g.manual_seed(4)
chosen = torch.randperm(20, generator=g)[:5]
expected = [chosen[k].item() for k in permutations(5, 3, 4)]
check(list(itertools.islice(subset, 20)) == expected,
      "RandomSubsetTrainingSampler: 5 of 20 chosen with seed_subset, shuffled with seed_shuffle")
raises(ValueError, lambda: RandomSubsetTrainingSampler(10, 1.5, seed_shuffle=0, seed_subset=0),
       "subset_ratio")

dicts = [{"annotations": [{"category_id": int(c)} for c in rng.integers(0, 6, rng.integers(0, 4))]}
         for _ in range(40)]
factors = RepeatFactorTrainingSampler.repeat_factors_from_category_frequency(dicts, 0.3)
worst = 0.0
for k, record in enumerate(dicts):
    wanted = 1.0
    for c in {a["category_id"] for a in record["annotations"]}:
        frequency = sum(any(a["category_id"] == c for a in r["annotations"]) for r in dicts) / 40
        wanted = max(wanted, math.sqrt(0.3 / frequency))
    worst = max(worst, abs(factors[k].item() - wanted))
check(worst < 1e-6, f"repeat factors == max(1, sqrt(t / f(c))) per image: largest diff {worst:g}")
no_sqrt = RepeatFactorTrainingSampler.repeat_factors_from_category_frequency(dicts, 0.3, False)
check(torch.allclose(no_sqrt, torch.clamp(factors ** 2, min=1.0)), "sqrt=False: the squares")

repeat = torch.tensor([1.0, 2.5, 0.3, 3.0])
sampler = RepeatFactorTrainingSampler(repeat, seed=11)
g = torch.Generator()
g.manual_seed(11)
by_hand = []
for _ in range(3):
    draws = torch.rand(4, generator=g).tolist()
    epoch = []
    for k, r in enumerate(repeat.tolist()):
        epoch += [k] * (int(r) + (1 if draws[k] < r - int(r) else 0))
    by_hand += [epoch[p] for p in torch.randperm(len(epoch), generator=g).tolist()]
check(list(itertools.islice(sampler, len(by_hand))) == by_hand,
      f"RepeatFactorTrainingSampler: {len(by_hand)} indices == 3 epochs drawn by hand")
counts = np.bincount(list(itertools.islice(RepeatFactorTrainingSampler(repeat, seed=2,
                                                                         shuffle=False), 68000)),
                     minlength=4) / (68000 / 6.8)
check(np.abs(counts - repeat.numpy()).max() < 0.05,
      f"stochastic rounding: mean repeats {np.round(counts, 3).tolist()} ~ {repeat.tolist()}")

bad_shards = []
for size in (1, 7, 16, 42, 101):
    for world in (1, 2, 3, 5, 8):
        shards = [InferenceSampler._get_local_indices(size, world, r) for r in range(world)]
        flat = [i for s in shards for i in s]
        lengths = [len(s) for s in shards]
        good = flat == list(range(size)) and max(lengths) - min(lengths) <= 1 and \
            lengths == sorted(lengths, reverse=True)
        if not good:
            bad_shards.append((size, world, shards))
check(not bad_shards, f"InferenceSampler: shards of 5 sizes over 5 world sizes cover "
      f"range(size) once, contiguous, sizes within 1, larger first (wrong: {bad_shards})")
check(list(InferenceSampler(9)) == list(range(9)) and len(InferenceSampler(9)) == 9,
      "InferenceSampler in a job of one: every index")

groups = rng.integers(0, 3, 60).tolist()
batches = [b for b in GroupedBatchSampler(torch.utils.data.SequentialSampler(range(60)), groups,
                                          4)]  # no len(): list() would ask for it
buffers, expected = {0: [], 1: [], 2: []}, []
for i in range(60):
    buffers[groups[i]].append(i)
    if len(buffers[groups[i]]) == 4:
        expected.append(buffers[groups[i]])
        buffers[groups[i]] = []
check(batches == expected, f"GroupedBatchSampler: {len(batches)} batches == a plain loop's")
raises(ValueError, lambda: GroupedBatchSampler([0, 1], [0, 1], 2), "Sampler")

# --- loaders ---
stream = ToIterableDataset(DatasetFromList(list(range(30))), TrainingSampler(30, seed=9))
loader = torch.utils.data.DataLoader(stream, num_workers=2, collate_fn=lambda b: b[0])
check(list(itertools.islice(loader, 60)) == permutations(30, 9, 2),
      "ToIterableDataset over 2 workers: the sampler's stream once, in order")
raises(TypeError, lambda: ToIterableDataset(DatasetFromList([1]), [0]), "Sampler")

for n, size in ((45, 8), (40, 8)):
    dl = build_batch_data_loader(DatasetFromList(list(range(n))), InferenceSampler(n), size,
                                 num_workers=2, drop_last=False)
    batches = list(dl)
    check(sorted(x for b in batches for x in b) == list(range(n)) and
          len(batches) == math.ceil(n / size) and len(batches) == len(dl),
          f"build_batch_data_loader({n} items, batch {size}, 2 workers, drop_last=False): "
          f"{len(batches)} batches, every item once")
raises(ValueError, lambda: build_batch_data_loader(DatasetFromList([1]), InferenceSampler(1), 0),
       "Total batch size")

shapes = [{"width": int(w), "height": int(h), "k": k}
          for k, (w, h) in enumerate(rng.integers(1, 100, (64, 2)))]
grouped = list(itertools.islice(AspectRatioGroupedDataset(shapes, 4), 8))
check(all(len(b) == 4 and len({d["width"] > d["height"] for d in b}) == 1 for b in grouped),
      "AspectRatioGroupedDataset: batches of 4, each all wide or all tall")

records = [{"file_name": f"{k}.jpg", "height": 10, "width": 20 if k % 2 else 5, "image_id": k,
            "annotations": [{"category_id": 0, "iscrowd": int(k % 3 == 0), "bbox": [0, 0, 1, 1],
                             "bbox_mode": BoxMode.XYWH_ABS}] if k % 4 else []}
           for k in range(24)]
DatasetCatalog.register("loading_records", lambda: copy.deepcopy(records))
MetadataCatalog.get("loading_records").set(thing_classes=["thing"])
kept = get_detection_dataset_dicts("loading_records")
plain_kept = [r["image_id"] for r in records
              if any(a["iscrowd"] == 0 for a in r["annotations"])]
check([r["image_id"] for r in kept] == plain_kept,
      f"get_detection_dataset_dicts: {len(kept)} of 24 images have a non-crowd annotation")
check(len(get_detection_dataset_dicts(["loading_records"], filter_empty=False)) == 24,
      "get_detection_dataset_dicts(filter_empty=False): all 24")
raises(KeyError, lambda: get_detection_dataset_dicts("no_such_dataset"), "no_such_dataset")

cfg = get_cfg()
cfg.DATASETS.TRAIN = ["loading_records"]
cfg.SOLVER.IMS_PER_BATCH = 4
cfg.DATALOADER.NUM_WORKERS = 0
cfg.SEED = 21
train = build_detection_train_loader(cfg, mapper=lambda d: d["image_id"],
                                     aspect_ratio_grouping=False)
g_ids = [plain_kept[i] for i in permutations(len(plain_kept), 21, 2)]
got = [i for b in itertools.islice(train, len(g_ids) // 4) for i in b]
check(got == g_ids[:len(got)],
      f"build_detection_train_loader(cfg, mapper): {len(got)} ids == TrainingSampler(seed=21)'s")
test = build_detection_test_loader(DatasetFromList(list(range(11))), mapper=lambda x: -x,
                                   batch_size=3)
check([x for b in test for x in b] == [-x for x in range(11)],
      "build_detection_test_loader(dataset, mapper, batch_size=3): every item once, in order")
by_cfg = build_detection_test_loader(cfg, "loading_records", mapper=lambda d: d["file_name"])
check([x for b in by_cfg for x in b] == [r["file_name"] for r in records],
      "build_detection_test_loader(cfg, name, mapper): the 24 records, unfiltered")
native = build_detection_test_loader(cfg, "loading_records")
check(native.dataset_name == "loading_records" and
      not isinstance(native, torch.utils.data.DataLoader),
      "build_detection_test_loader(cfg, name) without a mapper: the native loader")
raises(TypeError, lambda: inference_on_dataset(None, test, COCOEvaluator("loading_records")),
       "natively")

# --- COCO JSON ---
raw = json.load(open(val_json))
loaded = load_coco_json(val_json, "/images", "loading_coco_val")
meta = MetadataCatalog.get("loading_coco_val")
cat_ids = sorted(c["id"] for c in raw["categories"])
check(meta.thing_dataset_id_to_contiguous_id == {c: k for k, c in enumerate(cat_ids)} and
      meta.thing_classes == [c["name"] for c in sorted(raw["categories"], key=lambda c: c["id"])],
      "load_coco_json: thing_classes and the id map on the metadata")
images = {i["id"]: i for i in raw["images"]}
by_image = {}
for a in raw["annotations"]:
    by_image.setdefault(a["image_id"], []).append(a)
mismatches, compared, crowd_areas = 0, 0, 0.0
def runs_to_mask(runs, h, w):
    """An (h, w) mask from COCO's column-major runs, alternating 0 and 1 (numpy, the oracle)."""
    flat = np.repeat(np.arange(len(runs)) % 2, runs).astype(np.uint8)
    return flat.reshape(w, h).T


for record in loaded:
    image = images[record["image_id"]]
    mismatches += record["file_name"] != "/images/" + image["file_name"]
    mismatches += (record["height"], record["width"]) != (image["height"], image["width"])
    for got, want in zip(record["annotations"], by_image.get(record["image_id"], [])):
        compared += 1
        mismatches += got["bbox"] != want["bbox"] or got["bbox_mode"] != BoxMode.XYWH_ABS
        mismatches += got["category_id"] != cat_ids.index(want["category_id"])
        mismatches += got["iscrowd"] != want["iscrowd"]
        if isinstance(want["segmentation"], dict):
            h, w = want["segmentation"]["size"]
            decoded = _C.rle_decode(got["segmentation"]["counts"], h, w)
            mismatches += not np.array_equal(decoded,
                                             runs_to_mask(want["segmentation"]["counts"], h, w))
            ones = sum(want["segmentation"]["counts"][1::2])  # the file's runs of ones
            crowd_areas = max(crowd_areas, abs(_C.rle_area(got["segmentation"]["counts"], h, w) -
                                               ones))
        else:
            mismatches += got["segmentation"] != want["segmentation"]
check([r["image_id"] for r in loaded] == sorted(images) and
      compared == len(raw["annotations"]) and mismatches == 0,
      f"load_coco_json: {len(loaded)} images, {compared} annotations field by field, "
      f"{mismatches} mismatches")
check(crowd_areas == 0, f"crowd RLE areas == the sums of the file's runs of ones: largest diff "
      f"{crowd_areas}")

register_coco_instances("loading_registered", {}, val_json, "/images")
check(DatasetCatalog.get("loading_registered") ==
      load_coco_json(val_json, "/images", "loading_registered2"),
      "DatasetCatalog.get of a register_coco_instances dataset: load_coco_json of its file")
builtin_json = MetadataCatalog.get("coco_2017_val_100").json_file
if not os.path.exists(builtin_json):  # a built-in COCO dataset reads its file, named if absent
    raises(FileNotFoundError, lambda: DatasetCatalog.get("coco_2017_val_100"), builtin_json)

mask = rng.random((23, 17)) < 0.4
flat = mask.flatten(order="F")
runs, current, length = [], False, 0
for v in flat:
    if v == current:
        length += 1
    else:
        runs.append(length)
        current, length = v, 1
runs.append(length)
compressed = _C.rle_compress(runs, 23, 17)
check(np.array_equal(_C.rle_decode(compressed, 23, 17), mask.astype(np.uint8)) and
      _C.rle_area(compressed, 23, 17) == int(mask.sum()),
      f"RLE: compressed counts decode to the numpy mask; area {int(mask.sum())}")
raises(detkit.Error, lambda: _C.rle_area([3, 4], 3, 3), "9")

folder = tempfile.mkdtemp(prefix="detkit_data_loading_")
atexit.register(shutil.rmtree, folder, True)
tiny = {"images": [{"id": 1, "file_name": "a.jpg", "height": 10, "width": 10}],
        "categories": [{"id": 5, "name": "five"}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 5, "bbox": [1, 2, 3, 4],
                         "iscrowd": 0, "segmentation": [[1, 1, 4, 1, 4, 4], [1, 1]],
                         "keypoints": [2, 3, 2, 0, 0, 0]},
                        {"id": 2, "image_id": 1, "category_id": 5, "bbox": [1, 2, 3, 4],
                         "iscrowd": 0, "segmentation": [[1, 1, 4]]}]}


def write(content, name):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        json.dump(content, f)
    return path


one = load_coco_json(write(tiny, "tiny.json"), folder, "loading_tiny")[0]["annotations"]
check(len(one) == 1 and one[0]["segmentation"] == [[1, 1, 4, 1, 4, 4]] and
      one[0]["keypoints"] == [2.5, 3.5, 2, 0.5, 0.5, 0] and one[0]["category_id"] == 0,
      "load_coco_json: short polygons dropped (an annotation with none left too), keypoints "
      "+0.5, category 5 -> 0")
check(load_coco_json(write(tiny, "tiny2.json"), folder)[0]["annotations"][0]["category_id"] == 5,
      "load_coco_json without a dataset name keeps the file's category ids")
extra = load_coco_json(write(tiny, "tiny3.json"), folder, extra_annotation_keys=["id"])
check(extra[0]["annotations"][0]["id"] == 1, "extra_annotation_keys are copied")
duplicate = copy.deepcopy(tiny)
duplicate["annotations"][1]["id"] = 1
raises(ValueError, lambda: load_coco_json(write(duplicate, "dup.json"), folder), "not unique")
no_height = copy.deepcopy(tiny)
del no_height["images"][0]["height"]
raises(KeyError, lambda: load_coco_json(write(no_height, "noh.json"), folder), "height")
unknown = copy.deepcopy(tiny)
unknown["annotations"][0]["category_id"] = 9
raises(KeyError, lambda: load_coco_json(write(unknown, "unk.json"), folder, "loading_unk"),
       "category_id=9")

# --- convert_to_coco_dict ---
def shoelace(polygon):
    x, y = np.asarray(polygon[0::2], float), np.asarray(polygon[1::2], float)
    return 0.5 * abs(np.dot(x, np.roll(y, 1)) - np.dot(y, np.roll(x, 1)))


DatasetCatalog.register("loading_coco_round", lambda: load_coco_json(val_json, "/images",
                                                                      "loading_coco_round"))
converted = convert_to_coco_dict("loading_coco_round")
area_diff, box_diff, other_ids = 0.0, 0.0, 0
originals = {a["id"]: a for a in raw["annotations"]}
ordered = [a for r in loaded for a in by_image.get(r["image_id"], [])]
for got, want in zip(converted["annotations"], ordered):
    segm = want["segmentation"]
    oracle = sum(segm["counts"][1::2]) if isinstance(segm, dict) \
        else sum(shoelace(p) for p in segm)
    area_diff = max(area_diff, abs(got["area"] - oracle) / max(oracle, 1.0))
    box_diff = max(box_diff, max(abs(a - b) for a, b in zip(got["bbox"], want["bbox"])))
    other_ids += got["category_id"] != want["category_id"]
check(len(converted["annotations"]) == len(originals) and area_diff < 1e-6 and box_diff <= 5e-4 \
      and other_ids == 0,
      f"convert_to_coco_dict: {len(originals)} annotations, areas vs shoelace / RLE runs largest "
      f"relative diff {area_diff:.2e}, boxes {box_diff:.1e} (rounded to 3 decimals), the file's "
      "category ids")
round_trip = load_coco_json(write(converted, "round.json"), "")
check([(r["image_id"], len(r["annotations"])) for r in round_trip] ==
      [(r["image_id"], len(r["annotations"])) for r in loaded],
      "convert_to_coco_dict -> load_coco_json: the same images and annotation counts")
DatasetCatalog.register("loading_boxes", lambda: [
    {"file_name": "x.jpg", "image_id": 3, "height": 9, "width": 9, "annotations": [
        {"bbox": [1.0, 2.0, 5.0, 7.5], "bbox_mode": BoxMode.XYXY_ABS, "category_id": 0,
         "keypoints": [1.5, 2.5, 2]}]}])
MetadataCatalog.get("loading_boxes").set(thing_classes=["a"])
box_only = convert_to_coco_dict("loading_boxes")["annotations"][0]
check(box_only["bbox"] == [1.0, 2.0, 4.0, 5.5] and box_only["area"] == 22.0 and
      box_only["keypoints"] == [1.0, 2.0, 2] and box_only["num_keypoints"] == 1,
      f"convert_to_coco_dict: XYXY -> XYWH, area w*h, keypoints -0.5: {box_only}")
out_file = os.path.join(folder, "sub", "boxes.json")
convert_to_coco_json("loading_boxes", out_file)
first = os.path.getmtime(out_file)
convert_to_coco_json("loading_boxes", out_file)
check(json.load(open(out_file))["annotations"][0]["bbox"] == [1.0, 2.0, 4.0, 5.5] and
      os.path.getmtime(out_file) == first, "convert_to_coco_json writes, then keeps the cache")
DatasetCatalog.register("loading_no_classes", lambda: [])
raises(AttributeError, lambda: convert_to_coco_dict("loading_no_classes"), "thing_classes")
check(DatasetCatalog.pop("loading_no_classes") is not None and
      "loading_no_classes" not in DatasetCatalog, "DatasetCatalog.pop unregisters")


# --- instantiate ---
@dataclasses.dataclass
class Point:
    x: int
    y: int


made = instantiate({"_target_": "fractions.Fraction", "numerator": 3, "denominator": 4})
check(made == fractions.Fraction(3, 4), f"instantiate: fractions.Fraction(3, 4) == {made}")
nested = instantiate({"_target_": dict, "a": [{"_target_": "types.SimpleNamespace", "p": 1}, 1],
                      "b": {"c": {"_target_": "math.floor", "x": 2.5}}})
check(nested == {"a": [types.SimpleNamespace(p=1), 1],
                 "b": {"c": {"_target_": "math.floor", "x": 2.5}}},
      "instantiate: nested _target_ inside lists; a plain dict's values are left as they are")
check(instantiate(dump_dataclass(Point(1, 2))) == Point(1, 2),
      "dump_dataclass -> instantiate: the same dataclass")
raises(ImportError, lambda: instantiate({"_target_": "no_such_module.thing"}), "no_such_module")
raises(TypeError, lambda: instantiate({"_target_": "math.pi"}), "callable")
finish()
