"""The GPU size sweep drawn: throughput against column size, one line per codec.

:func:`draw_sweep` takes the rows of :func:`benchmarks.gpu_sizes.run` (also as saved by its
``--json``) and draws decoded GB/s against column size on log-log axes: a line for fsstgpu's
device-resident decode and one for each nvCOMP codec, single markers for the batched calls and
the host columns, the same run's device copy bandwidth as a dashed ceiling. ``.svg`` is written
by this module (no dependency); ``.png`` needs matplotlib (``pip install matplotlib``), which the
project does not depend on for one picture.

Usage: ``python -m benchmarks.sweep_plot SWEEP.json OUT.svg`` draws a saved sweep again.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from xml.sax.saxutils import escape

__all__ = ["draw_sweep", "plot_path_problem", "sweep_series"]

# distinct on white, fsstgpu first
COLOURS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22")
_BATCH = re.compile(r"^(?P<codec>.+?) batch \d+ x \d+ MiB$")


def sweep_series(rows: list[dict]) -> tuple[dict, dict, float | None]:
    """Split sweep rows into lines and single points.

    Returns
    -------
    lines : dict
        Codec -> sorted [(MiB, GB/s)] of its single-column rows (``fsstgpu``, ``nvCOMP ANS``, ...).
    points : dict
        Label -> (MiB, GB/s) for batched calls and host rows.
    copy_gbs : float or None
        The run's device copy bandwidth (read + written).

    Examples
    --------
    >>> from benchmarks.sweep_plot import sweep_series
    >>> rows = [{"what": "fsstgpu", "MiB": 16.0, "GB/s": 170.0, "copy GB/s": 4100.0},
    ...         {"what": "fsstgpu", "MiB": 1.0, "GB/s": 19.0, "copy GB/s": 4100.0},
    ...         {"what": "nvCOMP ANS batch 64 x 4 MiB", "MiB": 256.0, "GB/s": 219.0},
    ...         {"what": "nvCOMP zstd failed: RuntimeError: x"}]
    >>> lines, points, copy_gbs = sweep_series(rows)
    >>> lines, copy_gbs
    ({'fsstgpu': [(1.0, 19.0), (16.0, 170.0)]}, 4100.0)
    >>> points
    {'nvCOMP ANS batch 64 x 4 MiB': (256.0, 219.0)}
    """
    lines: dict[str, list] = {}
    points: dict[str, tuple] = {}
    copy_gbs = None
    for row in rows:
        mib, gbs = row.get("MiB"), row.get("GB/s")
        if not mib or not gbs or gbs <= 0:  # notes ("... failed", "not measured")
            continue
        copy_gbs = row.get("copy GB/s") or copy_gbs
        what = str(row["what"])
        if what == "fsstgpu" or (what.startswith("nvCOMP ") and not _BATCH.match(what)):
            lines.setdefault(what, []).append((float(mib), float(gbs)))
        else:
            points[what] = (float(mib), float(gbs))
    return {k: sorted(v) for k, v in lines.items()}, points, copy_gbs


def draw_sweep(rows: list[dict], path, *, title: str | None = None,
               kind: str | None = None) -> Path:
    """Draw the sweep ``rows`` into ``path`` (``.svg``, or ``.png`` with matplotlib; ``kind``
    ``"svg"`` or ``"png"`` names the format where ``path``'s suffix does not: a temporary
    file that becomes the plot, as ``fsstgpu bench --plot`` writes it).

    Raises
    ------
    ValueError
        For another suffix, rows with nothing to draw, or ``.png`` without matplotlib.

    Examples
    --------
    >>> import tempfile, os
    >>> from benchmarks.sweep_plot import draw_sweep
    >>> rows = [{"what": "fsstgpu", "MiB": m, "GB/s": 20.0 * m ** 0.7, "copy GB/s": 4100.0}
    ...         for m in (1, 4, 16)]
    >>> out = draw_sweep(rows, os.path.join(tempfile.mkdtemp(), "sweep.svg"))
    >>> out.read_text().count("<polyline")
    1
    """
    path = Path(path)
    kind = kind or path.suffix.lower().lstrip(".")
    problem = plot_path_problem(f"plot.{kind}")
    if problem:
        raise ValueError(f"{path}: {problem}")
    lines, points, copy_gbs = sweep_series(rows)
    if not lines and not points:
        raise ValueError("no measured rows to draw")
    title = title or "GPU decode throughput against column size (decoded bytes / s)"
    if kind == "png":
        _draw_png(lines, points, copy_gbs, path, title)
    else:
        path.write_text(_svg(lines, points, copy_gbs, title))
    return path


def _extent(lines, points, copy_gbs):
    xs = [x for s in lines.values() for x, _ in s] + [x for x, _ in points.values()]
    ys = [y for s in lines.values() for _, y in s] + [y for _, y in points.values()]
    ys += [copy_gbs] if copy_gbs else []
    x0, x1 = 2 ** math.floor(math.log2(min(xs))), 2 ** math.ceil(math.log2(max(xs)))
    y0, y1 = 10 ** math.floor(math.log10(min(ys))), 10 ** math.ceil(math.log10(max(ys)))
    return x0, (x1 if x1 > x0 else 2 * x0), y0, (y1 if y1 > y0 else 10 * y0)


def _svg(lines, points, copy_gbs, title) -> str:
    width, height, left, right, top, bottom = 980, 560, 70, 330, 40, 50
    x0, x1, y0, y1 = _extent(lines, points, copy_gbs)

    def px(x):
        return left + (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0)) * \
            (width - left - right)

    def py(y):
        return height - bottom - (math.log(y) - math.log(y0)) / (math.log(y1) - math.log(y0)) * \
            (height - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="22" font-size="15">{escape(title)}</text>']
    xr, yb = width - right, height - bottom
    x = x0
    while x <= x1:  # vertical grid at powers of two
        label = f"{x:g} MiB" if x < 1024 else f"{x / 1024:g} GiB"
        out += [f'<line x1="{px(x):.1f}" y1="{top}" x2="{px(x):.1f}" y2="{yb}" stroke="#ddd"/>',
                f'<text x="{px(x):.1f}" y="{yb + 16}" text-anchor="middle">{label}</text>']
        x *= 2
    y = y0
    while y <= y1:  # horizontal grid at powers of ten
        out += [f'<line x1="{left}" y1="{py(y):.1f}" x2="{xr}" y2="{py(y):.1f}" stroke="#ddd"/>',
                f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:g}</text>']
        y *= 10
    out += [f'<rect x="{left}" y="{top}" width="{xr - left}" height="{yb - top}" fill="none" '
            'stroke="#444"/>',
            f'<text x="{(left + xr) / 2}" y="{height - 12}" text-anchor="middle">column size '
            '(string bytes)</text>',
            f'<text transform="translate(16 {(top + yb) / 2}) rotate(-90)" '
            'text-anchor="middle">GB/s decoded (log)</text>']
    legend = []
    if copy_gbs:
        out.append(f'<line x1="{left}" y1="{py(copy_gbs):.1f}" x2="{xr}" y2="{py(copy_gbs):.1f}" '
                   'stroke="#000" stroke-dasharray="6 4"/>')
        legend.append(("line-dash", "#000", f"device copy, same run: {copy_gbs:.0f} GB/s"))
    for k, (name, series) in enumerate(lines.items()):
        colour = COLOURS[k % len(COLOURS)]
        pts = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in series)
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" '
                   f'stroke-width="{3 if name == "fsstgpu" else 1.8}"/>')
        out += [f'<circle cx="{px(a):.1f}" cy="{py(b):.1f}" r="3" fill="{colour}"/>'
                for a, b in series]
        legend.append(("line", colour, name))
    for k, (name, (a, b)) in enumerate(points.items()):
        colour = COLOURS[(len(lines) + k) % len(COLOURS)]
        match = _BATCH.match(name)
        if match and match["codec"] in lines:  # a batch in its codec's colour
            colour = COLOURS[list(lines).index(match["codec"]) % len(COLOURS)]
        out.append(f'<rect x="{px(a) - 4:.1f}" y="{py(b) - 4:.1f}" width="8" height="8" '
                   f'fill="none" stroke="{colour}" stroke-width="2"/>')
        legend.append(("point", colour, f"{name} ({b:.0f} GB/s)"))
    for k, (kind, colour, text) in enumerate(legend):
        ly = top + 8 + 18 * k
        lx = xr + 16
        if kind == "point":
            out.append(f'<rect x="{lx + 8}" y="{ly - 4}" width="8" height="8" fill="none" '
                       f'stroke="{colour}" stroke-width="2"/>')
        else:
            dash = ' stroke-dasharray="6 4"' if kind == "line-dash" else ""
            out.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 24}" y2="{ly}" stroke="{colour}" '
                       f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{lx + 30}" y="{ly + 4}">{escape(text)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def plot_path_problem(path) -> str | None:
    """Why the sweep cannot be drawn into ``path`` (its suffix; ``.png`` without matplotlib),
    or None: :func:`draw_sweep` and ``fsstgpu bench --plot`` (before it measures) ask it.

    Examples
    --------
    >>> from benchmarks.sweep_plot import plot_path_problem
    >>> plot_path_problem("sweep.svg") is None, plot_path_problem("sweep.pdf")
    (True, "the plot is written as .svg or .png, not '.pdf'")
    """
    import importlib.util

    suffix = Path(path).suffix.lower()
    if suffix not in (".svg", ".png"):
        return f"the plot is written as .svg or .png, not {suffix or 'no suffix'!r}"
    if suffix == ".png" and importlib.util.find_spec("matplotlib") is None:
        return "a .png needs matplotlib (pip install matplotlib); .svg needs nothing"
    return None


def _draw_png(lines, points, copy_gbs, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 5.6))
    for name, series in lines.items():
        ax.plot(*zip(*series, strict=True), marker="o", label=name,
                linewidth=3 if name == "fsstgpu" else 1.5)
    for name, (a, b) in points.items():
        ax.plot([a], [b], marker="s", linestyle="none", label=f"{name} ({b:.0f} GB/s)")
    if copy_gbs:
        ax.axhline(copy_gbs, color="black", linestyle="--",
                   label=f"device copy, same run: {copy_gbs:.0f} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("column size (MiB of string bytes)")
    ax.set_ylabel("GB/s decoded")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.savefig(path, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m benchmarks.sweep_plot SWEEP.json OUT.svg|OUT.png", file=sys.stderr)
        return 2
    print(draw_sweep(json.loads(Path(args[0]).read_text()), args[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
