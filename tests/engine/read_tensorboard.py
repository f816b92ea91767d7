#!/usr/bin/env python3
"""read_tensorboard.py OUTPUT_DIR [VIS_PERIOD MAX_ITER]: reads the TensorBoard event file that `detkit train` wrote in
OUTPUT_DIR with an independent reader (Debian's python3-protobuf and python3-crc32c; the message
layout written out below from TensorFlow's event.proto and summary.proto, not from detkit's
.proto) and checks: TFRecord framing (lengths, masked CRC32C of length and data), a first event
with file_version "brain.Event:2", then scalar events whose tags, steps and values are exactly
metrics.json's (values as float32: Summary.Value.simple_value is a float) and, with VIS_PERIOD,
one image event at each iteration it divides: Summary.Value.image, a PNG whose header gives the
height and width the event states, colorspace 3, two panels (ground truth, proposals) side by
side, under Detectron2's tag."""
import glob
import json
import os
import struct
import sys

try:
    import crc32c
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError as e:  # scripts/setup.sh installs both
    print(f"[ skipped ] TensorBoard read-back: {e} (Debian: python3-protobuf python3-crc32c)")
    sys.exit(0)

out = sys.argv[1]
files = glob.glob(os.path.join(out, "events.out.tfevents.*"))
assert len(files) == 1, f"expected one event file in {out}, found {files}"

# tensorflow.Event / Summary / Summary.Value, only the fields used, TensorFlow's numbers.
F = descriptor_pb2.FieldDescriptorProto
proto = descriptor_pb2.FileDescriptorProto(name="tf_event_subset.proto", package="tf",
                                           syntax="proto3")
# (message, [(field, number, type, message type or None, in the oneof?, repeated?)], oneof name)
LAYOUT = [
    ("Image", [("height", 1, F.TYPE_INT32, None, False, False),
               ("width", 2, F.TYPE_INT32, None, False, False),
               ("colorspace", 3, F.TYPE_INT32, None, False, False),
               ("encoded_image_string", 4, F.TYPE_BYTES, None, False, False)], None),
    ("Value", [("tag", 1, F.TYPE_STRING, None, False, False),
               ("simple_value", 2, F.TYPE_FLOAT, None, True, False),
               ("image", 4, F.TYPE_MESSAGE, ".tf.Image", True, False)], "value"),
    ("Summary", [("value", 1, F.TYPE_MESSAGE, ".tf.Value", False, True)], None),
    ("Event", [("wall_time", 1, F.TYPE_DOUBLE, None, False, False),
               ("step", 2, F.TYPE_INT64, None, False, False),
               ("file_version", 3, F.TYPE_STRING, None, True, False),
               ("summary", 5, F.TYPE_MESSAGE, ".tf.Summary", True, False)], "what"),
]
for name, fields, oneof in LAYOUT:
    message = proto.message_type.add(name=name)
    if oneof:
        message.oneof_decl.add(name=oneof)
    for field, number, kind, type_name, in_oneof, repeated in fields:
        f = message.field.add(name=field, number=number, type=kind,
                              label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
        if type_name:
            f.type_name = type_name
        if in_oneof:
            f.oneof_index = 0
pool = descriptor_pool.DescriptorPool()
pool.Add(proto)
Event = message_factory.GetMessageClass(pool.FindMessageTypeByName("tf.Event"))  # protobuf >= 4.21


def masked(data):
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


data = open(files[0], "rb").read()
events, pos = [], 0
while pos < len(data):
    header = data[pos:pos + 8]
    (length,) = struct.unpack("<Q", header)
    (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
    assert length_crc == masked(header), f"record at byte {pos}: length CRC mismatch"
    body = data[pos + 12:pos + 12 + length]
    (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
    assert len(body) == length and body_crc == masked(body), f"record at byte {pos}: data CRC"
    e = Event()
    e.ParseFromString(body)
    events.append(e)
    pos += 16 + length
assert events and events[0].file_version == "brain.Event:2", "first event is not the version"

scalars, images = {}, {}
for e in events[1:]:
    assert e.WhichOneof("what") == "summary", f"event at step {e.step} holds no summary"
    for v in e.summary.value:
        kind = v.WhichOneof("value")
        assert kind in ("simple_value", "image"), f"{v.tag} at step {e.step}: no value ({kind})"
        if kind == "image":
            images[(v.tag, e.step)] = v.image
        else:
            scalars[(v.tag, e.step)] = v.simple_value
expected = {}
for line in open(os.path.join(out, "metrics.json")):
    record = json.loads(line)
    it = record.pop("iteration")
    for tag, v in record.items():
        expected[(tag, it)] = struct.unpack("<f", struct.pack("<f", v))[0]
assert scalars == expected, (f"TensorBoard and metrics.json differ: only in TensorBoard "
                             f"{sorted(set(scalars) - set(expected))[:5]}, only in metrics.json "
                             f"{sorted(set(expected) - set(scalars))[:5]}, values "
                             f"{[(k, scalars[k], expected[k]) for k in scalars if k in expected and scalars[k] != expected[k]][:5]}")
tags = sorted({tag for tag, _ in scalars})
print(f"TensorBoard: {len(events)} records framed and CRC-checked, file_version brain.Event:2, "
      f"{len(scalars)} scalars = metrics.json's ({len(tags)} tags: {', '.join(tags[:6])}, ...)")

vis_period = int(sys.argv[2]) if len(sys.argv) > 2 else 0
if vis_period:
    max_iter = int(sys.argv[3])
    tag = "Left: GT bounding boxes;  Right: Predicted proposals"
    steps = sorted(step for (t, step) in images if t == tag)
    assert set(t for t, _ in images) == {tag}, sorted(images)
    assert steps == list(range(0, max_iter, vis_period)), steps
    for step in steps:
        picture = images[(tag, step)]
        png = picture.encoded_image_string
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR", f"step {step}: not a PNG"
        width, height = struct.unpack(">II", png[16:24])
        assert (width, height) == (picture.width, picture.height), (width, height, picture)
        assert picture.colorspace == 3 and width % 2 == 0, picture.colorspace
    print(f"TensorBoard: {len(steps)} training images (PNG {width}x{height}: ground truth | "
          f"proposals) at steps {steps}")
else:
    assert not images, f"images without VIS_PERIOD: {sorted(images)[:3]}"
