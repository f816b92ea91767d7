"""COCO's run-length encoding of masks, as plain Python: the compressed counts string (COCO's
6-bit characters, each count after the second stored as the difference from the count two
before) to counts and back, and a mask's area from its counts."""


def decode_counts(text):
    """COCO's compressed counts (str or bytes) -> the list of run lengths."""
    if isinstance(text, bytes):
        text = text.decode("ascii")
    counts, value, shift = [], 0, 0
    for char in text:
        code = ord(char) - 48
        if not 0 <= code < 64:
            raise ValueError(f"RLE counts: character {char!r} is not of COCO's encoding")
        value |= (code & 0x1F) << shift
        shift += 5
        if code & 0x20:  # more characters of this number follow
            continue
        if code & 0x10:  # the number is negative: extend its sign
            value -= 1 << shift
        if len(counts) > 2:
            value += counts[-2]
        counts.append(value)
        value, shift = 0, 0
    if shift:
        raise ValueError("RLE counts: the string ends inside a number")
    return counts


def encode_counts(counts):
    """The list of run lengths -> COCO's compressed counts (bytes, as pycocotools gives)."""
    out = []
    for i, count in enumerate(counts):
        value = int(count) - (int(counts[i - 2]) if i > 2 else 0)
        while True:
            code = value & 0x1F
            value >>= 5  # arithmetic: a negative value tends to -1
            more = value != -1 if code & 0x10 else value != 0
            out.append(chr(48 + (code | (0x20 if more else 0))))
            if not more:
                break
    return "".join(out).encode("ascii")


def rle_counts(rle):
    """An RLE dict's run lengths, whether its counts are compressed (str / bytes) or a list."""
    counts = rle["counts"]
    return [int(c) for c in counts] if isinstance(counts, list) else decode_counts(counts)


def rle_area(rle):
    """The number of mask pixels: the runs at odd positions are the ones."""
    counts = rle_counts(rle)
    height, width = (int(v) for v in rle["size"])
    if sum(counts) != height * width:
        raise ValueError(f"RLE counts add up to {sum(counts)}, not {height} x {width} = "
                         f"{height * width} pixels")
    return sum(counts[1::2])
