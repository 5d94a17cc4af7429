"""The results as a table, as JSON and as a plot of the ratios (matplotlib, optional)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from .runner import VARIANTS, geomean


def fmt_time(seconds) -> str:
    if not seconds or not math.isfinite(seconds):
        return "-"
    return f"{seconds * 1e3:9.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:9.1f} us"


def table(results: dict) -> str:
    """One line per kernel, size and contender: time per rep, bandwidth, ratios to the peers and
    the check; then the geometric means of the ratios per cubepy contender and peer."""
    lines = []
    head = f"{'kernel':<18} {'size':<8} {'contender':<26} {'time/rep':>12} {'GB/s':>8}  ratios (cubepy / peer)"
    lines += [head, "-" * len(head)]
    for row in results["rows"]:
        for label, res in row["contenders"].items():
            t = res.get("median_s")
            bw = f"{row['bytes_per_rep'] / t / 1e9:8.1f}" if t else f"{'-':>8}"
            rs = row["ratios"].get(label, {})
            ratio_text = "  ".join(f"{peer}: {r:.2f}" for peer, r in rs.items())
            if not res.get("correct"):
                ratio_text = "FAILED: " + (res.get("error") or f"mismatch {res.get('max_relative_error')}, "
                                                               f"checksum {res.get('checksum')}")
            lines.append(f"{row['kernel']:<18} {row['size']:<8} {label:<26} {fmt_time(t):>12} {bw}  {ratio_text}")
        costs = [f"{v}: {row['ratios'][f'checked cost {v}']:.2f}" for v in VARIANTS
                 if f"checked cost {v}" in row["ratios"]]
        if costs:
            lines.append(f"{'':<18} {'':<8} {'checked / unchecked':<26} {'':>12} {'':>8}  " + "  ".join(costs))
    lines.append("")
    lines.append("geometric means over kernels and sizes:")
    for key, value in summary(results).items():
        lines.append(f"  {key:<60} {value:.3f}")
    return "\n".join(lines)


def summary(results: dict) -> dict[str, float]:
    """Geometric means of each ratio over the rows that have it."""
    collected: dict[str, list[float]] = {}
    for row in results["rows"]:
        for label, value in row["ratios"].items():
            if isinstance(value, dict):
                for peer, r in value.items():
                    collected.setdefault(f"{label} / {peer}", []).append(r)
            else:
                collected.setdefault(label, []).append(value)
    return {k: geomean(v) for k, v in sorted(collected.items())}


def checksums(results: dict) -> list[str]:
    """Lines ``KERNEL size: reference checksum (reps)`` for the report."""
    return [f"{row['kernel']:<18} {row['size']:<8} {row['reference_checksum']} (after {row['checksum_reps']} "
            f"rep{'s' if row['checksum_reps'] > 1 else ''})" for row in results["rows"]]


def write_json(results: dict, path: str) -> None:
    Path(path).write_text(json.dumps(results, indent=1, default=str))


def plot(results: dict, path: str) -> str | None:
    """Bars of cubepy time / primary peer time per kernel and size; None, or why it was not drawn."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"matplotlib is not installed ({e}); pip install matplotlib"
    rows = results["rows"]
    if not rows:
        return "no results to plot"
    ran = {p for r in rows for v in r["ratios"].values() if isinstance(v, dict) for p in v}
    peer = results.get("primary_peer") if results.get("primary_peer") in ran else next(iter(sorted(ran)), None)
    if peer is None:
        return "no peer ran, so there are no ratios to plot"
    labels = [f"{r['kernel']}\n{r['size']}" for r in rows]
    series = sorted({k for r in rows for k, v in r["ratios"].items() if isinstance(v, dict) and peer in v})
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.9), 4.5))
    width = 0.8 / max(1, len(series))
    for n, name in enumerate(series):
        values = [r["ratios"].get(name, {}).get(peer, float("nan")) for r in rows]
        ax.bar([i + n * width for i in range(len(rows))], values, width, label=name)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(rows))])
    ax.set_xticklabels(labels, fontsize=7, rotation=30, ha="right")
    ax.set_ylabel(f"time / {peer} time")
    ax.set_title(f"cubepy on {results['machine']['device_name']} vs {peer} (lower is faster)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None
