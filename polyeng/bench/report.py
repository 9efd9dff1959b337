"""What ``polyeng bench`` shows of the op workload: the table with its header and summary, and the chart."""
from __future__ import annotations

import math
import os

from . import BenchError


def _num(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def header_lines(info: dict) -> list[str]:
    set_threads = ", ".join(f"{k} {v}" for k, v in info["threads_set"].items()) or "no threaded library found"
    affinity = "" if info["affinity"] is None else f", {info['affinity']} usable by this process"
    return [f"polyeng bench  {info['date']}  scale {info['scale']}, median of {info['repeat']} "
            f"repetitions, dtypes {','.join(info['dtypes'])}",
            f"cores: {info['cpu_count']}{affinity} ({info['machine']}); threads: {info['threads']} ({set_threads}); "
            f"{info.get('thread_policy', '')}",
            f"python {info['python']}, numpy {info['numpy']}, numba {info['numba']}, torch {info['torch']}, "
            f"polyeng {info['polyeng']}"]


def table(report: dict) -> str:
    """The header, one row per case and runner (the copy baseline too), and the geometric-mean summary."""
    rows = [("case", "engine", "dtype", "median ms", "GB/s", "% copy", "torch/eng", "basic/eng", "note")]
    for entry in report["results"]:
        for name in report["engines"]:
            if name in entry["errors"]:
                rows.append((entry["case"], name, entry["dtype"], "error", "-", "-", "-", "-", entry["errors"][name]))
            elif name in entry["engines"]:
                r = entry["engines"][name]
                diff = "shapes or NaNs differ" if r["max_rel_diff"] is None else f"max rel diff {r['max_rel_diff']:.1e}"
                note = "" if r["ok"] else f"MISMATCH vs basic: {diff}"
                rows.append((entry["case"], name, entry["dtype"], _num(r["median_s"] * 1e3, ".3f"),
                             _num(r["gbps"] if r["ok"] else None, ".2f"), _num(r["copy_pct"], ".0f"),
                             _num(r["torch_ratio"], ".2f"), _num(r["basic_ratio"], ".2f"), note))
        copy = entry["copy"]
        rows.append((entry["case"], "(copy)", entry["dtype"], _num(copy["median_s"] * 1e3, ".3f"),
                     _num(copy["gbps"], ".2f"), "100", "-", "-", f"{entry['bytes'] / 1e6:.1f} MB read+written"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    right = {3, 4, 5, 6, 7}
    lines = []
    for i, row in enumerate(rows):
        cells = [c.rjust(w) if j in right else c.ljust(w) for j, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells + [row[-1]]).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  ----")
    return "\n".join(header_lines(report["header"]) + [""] + lines + [""] + summary_lines(report))


def summary_lines(report: dict) -> list[str]:
    """Geometric mean of torch/engine per engine and dtype (> 1: polyeng faster), over valid cases."""
    if "torch" not in report["engines"]:
        return ["torch not run: no torch/engine ratios"]
    lines = []
    for dtype in report["header"]["dtypes"]:
        parts = []
        for name in report["engines"]:
            if name == "torch":
                continue
            ratios = [e["engines"][name]["torch_ratio"] for e in report["results"]
                      if e["dtype"] == dtype and e["engines"].get(name, {}).get("torch_ratio")]
            if ratios:
                mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
                parts.append(f"{name} {mean:.2f}x ({len(ratios)} cases)")
        lines.append(f"geometric mean of torch/engine, {dtype}: " + (", ".join(parts) or "no comparable case"))
    return lines


def require_matplotlib():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise BenchError("--plot needs matplotlib, which is not installed: "
                         "pip install 'polyeng[plot]' (or pip install matplotlib)") from None
    return Figure


def check_plot_path(path: str) -> str:
    """The chart's file format, from the name's extension (none: PNG); refused before the run if
    matplotlib is missing or cannot write that format."""
    Figure = require_matplotlib()
    extension = os.path.splitext(path)[1].lower().lstrip(".")
    formats = Figure().canvas.get_supported_filetypes()
    if extension and extension not in formats:
        others = ", ".join("." + f for f in sorted(formats) if f not in PLOT_FORMATS)
        raise BenchError(f"--plot {path}: cannot write a .{extension} chart; expected a file name ending in "
                         f".png, .svg or .pdf (or {others})")
    return extension or "png"


PLOT_FORMATS = ("png", "svg", "pdf")
# One hue per engine, in the order engines appear; its device-tensor runner gets a lighter shade.
_ENGINE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
_DTYPE_HATCHES = {"f32": "", "bf16": "//", "f16": "..", "f64": "xx"}


def _lighter(colour: str, amount: float = 0.5) -> tuple:
    r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return tuple(c + (1 - c) * amount for c in (r, g, b))


def _ratio_label(value, _position=None) -> str:
    return f"{value:g}x"


def ratio_axis(ax, ratios) -> None:
    """A log y axis for bars of speed ratios around 1x, with ticks labelled as ratios."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    ratios = list(ratios)
    ax.set_yscale("log")
    ticks = _ratio_ticks(min(min(ratios), 1.0) / 1.1, max(max(ratios), 1.0) * 1.1)
    ax.set_ylim(ticks[0] / 1.05, ticks[-1] * 1.05)
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(_ratio_label))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.grid(axis="y", color="0.85", linewidth=0.6)
    ax.set_axisbelow(True)


def _ratio_ticks(low: float, high: float) -> list[float]:
    """1-2-5 steps (0.5x, 1x, 2x, 5x, 10x ...) from the last one below ``low`` to the first one above
    ``high``, so that the ends of the axis are marked too."""
    ticks, decade = [], 10.0 ** math.floor(math.log10(low))
    while decade <= high * 10:
        ticks += [decade * m for m in (1, 2, 5)]
        decade *= 10
    below = max(t for t in ticks if t <= low)
    above = min(t for t in ticks if t >= high)
    return [t for t in ticks if below <= t <= above]


def chart(report: dict):
    """A matplotlib Figure: bars of torch/engine per case and runner (basic/engine without torch),
    from the line at 1x on a log scale; one colour per engine (lighter for its device-tensor
    runner), one hatch per dtype; the reference named in the title and the legend."""
    Figure = require_matplotlib()
    key = "torch_ratio" if "torch" in report["engines"] else "basic_ratio"
    reference = "torch" if key == "torch_ratio" else "basic"
    dtypes = report["header"]["dtypes"]
    series = [(name, dtype) for dtype in dtypes for name in report["engines"] if name not in ("torch", reference)]
    cases = list(dict.fromkeys(e["case"] for e in report["results"]))
    values = {(e["case"], name, e["dtype"]): e["engines"][name][key]
              for e in report["results"] for name in e["engines"] if e["engines"][name].get(key)}
    series = [s for s in series if any((c, *s) in values for c in cases)]
    if not series:
        raise BenchError(f"--plot: no {key.replace('_', ' ')} to draw (every result is missing or a mismatch)")
    engines = list(dict.fromkeys(name.split(":")[0] for name, _ in series))
    colour = {e: _ENGINE_COLOURS[i % len(_ENGINE_COLOURS)] for i, e in enumerate(engines)}
    width = 0.8 / len(series)
    fig = Figure(figsize=(min(20.0, max(7.5, 3.5 + len(cases) * (0.3 + 0.18 * len(series)))), 5.5),
                 layout="constrained")
    ax = fig.add_subplot()
    for i, (name, dtype) in enumerate(series):
        engine = name.split(":")[0]
        shade = colour[engine] if name == engine else _lighter(colour[engine])
        shown = [(j, values[(c, name, dtype)]) for j, c in enumerate(cases) if (c, name, dtype) in values]
        # each bar goes from 1x (the reference) to the ratio: up when the engine is faster, down when slower
        ax.bar([j + (i - (len(series) - 1) / 2) * width for j, _ in shown], [v - 1 for _, v in shown], width,
               bottom=1.0, color=shade, hatch=_DTYPE_HATCHES.get(dtype, "++") if len(dtypes) > 1 else None,
               edgecolor="white" if len(dtypes) == 1 else "black", linewidth=0.4,
               label=name if len(dtypes) == 1 else f"{name} {dtype}")
    ax.axhline(1.0, color="black", linewidth=1, label=f"{reference} (1x)")
    ratio_axis(ax, values.values())
    several = len(cases) > 1
    ax.set_xticks(range(len(cases)), cases, rotation=30 if several else 0, ha="right" if several else "center")
    margin = max(0.6, (4 - len(cases)) / 2)   # a lone case's bars stay bar-wide, not page-wide
    ax.set_xlim(-margin, len(cases) - 1 + margin)
    against = "PyTorch" if reference == "torch" else "BASIC (numpy reference; torch not run)"
    ax.set_ylabel(f"{reference} time / engine time (above 1x: engine faster)")
    header = report["header"]
    ax.set_title(f"polyeng engines vs {against}\nscale {header['scale']}, {header['threads']} threads, "
                 f"median of {header['repeat']}, {', '.join(dtypes)}, {header['date'][:10]}", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)   # beside the bars
    return fig
