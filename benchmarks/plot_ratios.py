"""A bar chart (PNG) of per-model time ratios from a benchmark's raw JSON,
for README tables too long to read at a glance.

    python benchmarks/plot_ratios.py results/coverage_cpu_targets.json results/cpu_ratios.png
    python benchmarks/plot_ratios.py zoo.json results/cuda_zoo_ratios.png   # cuda_vs_torch.py --zoo --json

coverage.py's rows (a list): aotishim over torch's AOTInductor runner and
over eager. cuda_zoo.py's ({"rows": [...]}): aotishim, default and with
cuda_graphs=True, over the faster of eager and torch.compile, and over
torch's runner. One group of bars per model, on a log axis with 1.0 (parity)
drawn: below it aotishim is faster. A model a side did not measure has no
bar for that ratio."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def _us(row: dict, side: str) -> float | None:
    v = row.get(side)
    if not isinstance(v, dict):
        return None
    t = v.get("us", v.get("ms"))
    return t if isinstance(t, (int, float)) and t > 0 else None


def cpu_series(rows: list[dict]) -> dict[str, list[float | None]]:
    def ratio(r, peer):
        ours = (r.get("aotishim") or {}).get("ms")
        other = r.get("eager_ms") if peer == "eager" else (r.get("torch") or {}).get("ms")
        return ours / other if ours and other else None

    return {"/ torch AOTI runner": [ratio(r, "torch") for r in rows],
            "/ eager": [ratio(r, "eager") for r in rows]}


def cuda_series(rows: list[dict]) -> dict[str, list[float | None]]:
    def over(r, side, peers):
        ours = _us(r, side)
        best = min([t for t in (_us(r, p) for p in peers) if t], default=None)
        return ours / best if ours and best else None

    fastest = ("eager", "torch_compile")
    return {"default / faster of eager, torch.compile": [over(r, "aotishim", fastest) for r in rows],
            "cuda_graphs / faster of eager, torch.compile": [
                over(r, "aotishim_graphs", fastest) for r in rows],
            "cuda_graphs / torch.compile reduce-overhead": [
                over(r, "aotishim_graphs", ("torch_compile_graphs",)) for r in rows],
            "default / torch AOTI runner": [over(r, "aotishim", ("torch_aoti",)) for r in rows]}


def plot(models: list[str], series: dict[str, list[float | None]], title: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    n, k = len(models), len(series)
    width = 0.8 / k
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * n * max(k, 2) / 2 + 2), 4.5))
    for j, (label, values) in enumerate(series.items()):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(n)]
        pairs = [(x, v) for x, v in zip(xs, values) if v is not None and math.isfinite(v)]
        if pairs:
            ax.bar([p[0] for p in pairs], [p[1] for p in pairs], width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    plain = matplotlib.ticker.FormatStrFormatter("%g")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_ylabel("time ratio (below 1: aotishim faster)")
    ax.set_xticks(range(n))
    ax.set_xticklabels(models, rotation=60, ha="right", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", type=Path)
    p.add_argument("png", type=Path)
    p.add_argument("--title", help="default: the benchmark and, for cuda, the machine")
    a = p.parse_args()
    data = json.loads(a.json.read_text())
    if isinstance(data, dict) and "rows" in data:
        rows = [r for r in data["rows"] if isinstance(r, dict) and "model" in r]
        series, title = cuda_series(rows), f"aotishim on cuda: {data.get('machine', '')}"
    elif isinstance(data, list):
        rows = [r for r in data if isinstance(r, dict) and "model" in r]
        series, title = cpu_series(rows), "aotishim on the cpu (benchmarks/coverage.py)"
    else:
        p.error(f"{a.json}: neither coverage.py's rows nor cuda_zoo.py's results")
    keep = [i for i in range(len(rows)) if any(v[i] is not None for v in series.values())]
    if not keep:
        p.error(f"{a.json}: no model has a ratio to plot")
    models = [rows[i]["model"] for i in keep]
    series = {k: [v[i] for i in keep] for k, v in series.items()}
    plot(models, series, a.title or title[:120], a.png)
    for label, values in series.items():
        got = [v for v in values if v is not None]
        geo = math.exp(sum(math.log(v) for v in got) / len(got)) if got else float("nan")
        print(f"{label}: {len(got)} models, geometric mean {geo:.2f}")
    print(f"wrote {a.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
