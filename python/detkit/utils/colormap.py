"""detkit.utils.colormap: Detectron2's colormap / random_color / random_colors over a palette
generated here (hues spread by the golden ratio at two saturations and brightnesses), not
Detectron2's hand-picked table: colours differ, the interface is the same."""
import colorsys

import numpy as np

_SIZE = 74  # as many colours as Detectron2's table


def _palette():
    golden = 0.618033988749895
    rows = []
    for k in range(_SIZE):
        hue = (0.02 + k * golden) % 1.0
        saturation = 0.85 if (k // 5) % 2 == 0 else 0.55
        value = 0.95 if (k // 3) % 2 == 0 else 0.75
        rows.append(colorsys.hsv_to_rgb(hue, saturation, value))
    return np.asarray(rows, dtype=np.float32)


_COLORS = _palette()  # (74, 3) RGB in 0..1


def colormap(rgb=False, maximum=255):
    """The palette as a float32 (74, 3) array in 0..maximum, RGB if rgb else BGR."""
    colors = _COLORS * maximum
    return colors if rgb else colors[:, ::-1].copy()


def random_color(rgb=False, maximum=255):
    """One colour of the palette picked at random (numpy's global generator): a (3,) array."""
    index = np.random.randint(0, len(_COLORS))
    color = _COLORS[index] * maximum
    return color if rgb else color[::-1].copy()


def random_colors(N, rgb=False, maximum=255):
    """N distinct colours of the palette in random order (N <= 74): a list of (3,) arrays."""
    if not 0 <= N <= len(_COLORS):
        raise ValueError(f"random_colors: N must be in 0..{len(_COLORS)}, got {N}")
    indices = np.random.permutation(len(_COLORS))[:N]
    return [(_COLORS[i] * maximum if rgb else _COLORS[i, ::-1] * maximum) for i in indices]
