"""Colours as Detectron2's Visualizer takes them (matplotlib's formats), read without matplotlib:
basic colour names ("red", "r", "tab:blue", ...), "#rrggbb" / "#rgb" hex strings, and (r, g, b)
sequences of floats in 0..1. to_rgb returns an (r, g, b) tuple of floats in 0..1."""
import numpy as np

# matplotlib's one-letter colours, its Tableau palette, and the CSS names people use most.
_NAMED = {
    "b": (0.0, 0.0, 1.0), "g": (0.0, 0.5, 0.0), "r": (1.0, 0.0, 0.0), "c": (0.0, 0.75, 0.75),
    "m": (0.75, 0.0, 0.75), "y": (0.75, 0.75, 0.0), "k": (0.0, 0.0, 0.0), "w": (1.0, 1.0, 1.0),
    "tab:blue": "#1f77b4", "tab:orange": "#ff7f0e", "tab:green": "#2ca02c", "tab:red": "#d62728",
    "tab:purple": "#9467bd", "tab:brown": "#8c564b", "tab:pink": "#e377c2",
    "tab:gray": "#7f7f7f", "tab:grey": "#7f7f7f", "tab:olive": "#bcbd22", "tab:cyan": "#17becf",
    "red": "#ff0000", "green": "#008000", "blue": "#0000ff", "yellow": "#ffff00",
    "cyan": "#00ffff", "aqua": "#00ffff", "magenta": "#ff00ff", "fuchsia": "#ff00ff",
    "black": "#000000", "white": "#ffffff", "gray": "#808080", "grey": "#808080",
    "darkgray": "#a9a9a9", "darkgrey": "#a9a9a9", "lightgray": "#d3d3d3",
    "lightgrey": "#d3d3d3", "silver": "#c0c0c0", "orange": "#ffa500", "purple": "#800080",
    "pink": "#ffc0cb", "brown": "#a52a2a", "lime": "#00ff00", "navy": "#000080",
    "maroon": "#800000", "olive": "#808000", "teal": "#008080", "gold": "#ffd700",
    "violet": "#ee82ee", "indigo": "#4b0082", "orchid": "#da70d6", "salmon": "#fa8072",
    "coral": "#ff7f50", "tomato": "#ff6347", "khaki": "#f0e68c", "tan": "#d2b48c",
    "beige": "#f5f5dc", "turquoise": "#40e0d0", "skyblue": "#87ceeb",
    "lightblue": "#add8e6", "darkblue": "#00008b", "darkgreen": "#006400",
    "lightgreen": "#90ee90", "darkred": "#8b0000", "crimson": "#dc143c",
}


def _from_hex(text):
    digits = text[1:]
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    if len(digits) != 6 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise ValueError(f"invalid colour {text!r}: a hex colour is #rrggbb or #rgb")
    return tuple(int(digits[k:k + 2], 16) / 255.0 for k in (0, 2, 4))


def to_rgb(color):
    """`color` (a name, a hex string or an (r, g, b[, a]) sequence in 0..1) as (r, g, b) floats."""
    if isinstance(color, str):
        text = color.strip()
        if text.startswith("#"):
            return _from_hex(text)
        named = _NAMED.get(text.lower())
        if named is None:
            raise ValueError(f"unknown colour name {color!r} (known: matplotlib's one-letter "
                             f"colours, tab:* and common CSS names, or '#rrggbb')")
        return _from_hex(named) if isinstance(named, str) else named
    values = np.asarray(color, dtype=np.float64).reshape(-1)
    if values.size not in (3, 4) or not np.all(np.isfinite(values)):
        raise ValueError(f"invalid colour {color!r}: expected 3 (or 4) numbers in 0..1")
    if values.min() < 0 or values.max() > 1:
        raise ValueError(f"invalid colour {color!r}: its values must lie in 0..1")
    return tuple(float(v) for v in values[:3])
