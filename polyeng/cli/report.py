"""What ``polyeng bench`` shows: the progress bar, the table with its header and summary, the PNG chart."""
from __future__ import annotations

import math
import shutil
import sys


class Progress:
    """A one-line bar on a terminal; elsewhere (a pipe, a log file) only the final line."""

    def __init__(self, stream=None, quiet: bool = False):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = not quiet and hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, done: int, total: int, label: str) -> None:
        if not self.live:
            return
        width = shutil.get_terminal_size((80, 24)).columns - 1
        filled = int(24 * done / max(total, 1))
        line = f"[{'#' * filled}{'.' * (24 - filled)}] {done}/{total} {label}"
        self.stream.write("\r" + line[:width].ljust(width))
        self.stream.flush()

    def finish(self, text: str) -> None:
        if self.live:
            self.stream.write("\r" + " " * (shutil.get_terminal_size((80, 24)).columns - 1) + "\r")
        if not self.quiet:
            print(text, file=self.stream, flush=True)


def _num(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def header_lines(info: dict) -> list[str]:
    set_threads = ", ".join(f"{k} {v}" for k, v in info["threads_set"].items()) or "no threaded library found"
    affinity = "" if info["affinity"] is None else f", {info['affinity']} usable by this process"
    return [f"polyeng bench  {info['date']}  scale {info['scale']}, median of {info['repeat']} "
            f"repetitions, dtypes {','.join(info['dtypes'])}",
            f"cores: {info['cpu_count']}{affinity} ({info['machine']}); threads: {info['threads']} ({set_threads}); "
            f"OMP_WAIT_POLICY {info.get('omp_wait_policy', 'unset')}",
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
        from .bench import BenchError
        raise BenchError("--plot needs matplotlib, which is not installed: "
                         "pip install 'polyeng[plot]' (or pip install matplotlib)") from None
    return Figure


def plot(report: dict, path: str) -> None:
    """Bar chart of torch/engine per case and engine (log scale, line at 1); basic/engine without torch."""
    Figure = require_matplotlib()
    key = "torch_ratio" if "torch" in report["engines"] else "basic_ratio"
    dtypes = report["header"]["dtypes"]
    series = [(name, dtype) for dtype in dtypes for name in report["engines"]
              if name not in ("torch", "basic" if key == "basic_ratio" else "")]
    cases = list(dict.fromkeys(e["case"] for e in report["results"]))
    values = {(e["case"], name, e["dtype"]): e["engines"][name][key]
              for e in report["results"] for name in e["engines"] if e["engines"][name].get(key)}
    series = [s for s in series if any((c, *s) in values for c in cases)]
    if not series:
        from .bench import BenchError
        raise BenchError(f"--plot: no {key.replace('_', ' ')} to draw (every result is missing or a mismatch)")
    fig = Figure(figsize=(min(18.0, 3 + len(cases) * (0.35 + 0.2 * len(series))), 5), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / len(series)
    for i, (name, dtype) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j, c in enumerate(cases) if (c, name, dtype) in values]
        ys = [values[(c, name, dtype)] for c in cases if (c, name, dtype) in values]
        ax.bar(xs, ys, width, label=name if len(dtypes) == 1 else f"{name} {dtype}")
    ax.axhline(1.0, color="black", linewidth=1)
    ax.set_yscale("log")
    ax.set_xticks(range(len(cases)), cases, rotation=40, ha="right")
    reference = "torch" if key == "torch_ratio" else "basic"
    ax.set_ylabel(f"{reference} time / engine time (> 1: engine faster)")
    ax.set_title(f"polyeng vs {reference}, scale {report['header']['scale']}, "
                 f"{report['header']['threads']} threads, {report['header']['date'][:10]}")
    ax.legend()
    fig.savefig(path, dpi=110)
