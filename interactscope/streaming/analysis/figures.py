"""The report's figures (matplotlib, Agg backend), each written as ``NAME.png`` and ``NAME.pdf``:
score by tolerance with and without scene input (paper Figure 3), step coverage and complete
sequences against the permutation reference (paper Figure 6)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interactscope.core.files import write_atomic

__all__ = ["sequence_figure", "tolerance_figure"]


def _plt():
    # heavy: matplotlib reads its font cache and writes ~/.cache, ~/.config on import; only
    # figures need it (a Ray worker's HOME stays untouched)
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt  # heavy: as above, after the Agg backend is chosen

    return plt


def _save(fig: Any, out: Path, name: str) -> list[Path]:
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    for p, dpi in zip(paths, (150, "figure"), strict=True):
        buf = io.BytesIO()
        fig.savefig(buf, format=p.suffix[1:], dpi=dpi, bbox_inches="tight")
        write_atomic(p, buf.getvalue())
    _plt().close(fig)
    return paths


def tolerance_figure(
    curves: pd.DataFrame, out: Path, name: str = "fig_scene_tolerance"
) -> list[Path]:
    """Figure 3 (left): T1 joint accuracy (%) by tolerance δ, with (solid) and without (dashed)
    scene input. ``curves``: ``model, scene, tolerance_s, estimate, low, high``."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    models = list(dict.fromkeys(curves["model"]))
    colors = plt.get_cmap("tab10")
    n = max(1, len(models))
    for i, model in enumerate(models):
        for scene, style in (("full", "-"), ("none", "--")):
            c = curves[(curves["model"] == model) & (curves["scene"] == scene)].sort_values(
                "tolerance_s"
            )
            if c.empty:
                continue
            x = (
                c["tolerance_s"].to_numpy()
                + (i - (n - 1) / 2) * 0.06
                + (0.02 if scene == "none" else 0)
            )
            y = c["estimate"].to_numpy()
            err = np.vstack([y - c["low"].to_numpy(), c["high"].to_numpy() - y])
            ax.errorbar(
                x,
                y,
                yerr=np.nan_to_num(err),
                fmt="o" + style,
                color=colors(i % 10),
                capsize=3,
                label=f"{model} — {'with scene' if scene == 'full' else 'request only'}",
                markerfacecolor="white" if scene == "none" else colors(i % 10),
            )
    tol = sorted(set(curves["tolerance_s"])) if len(curves) else [1, 2, 4]
    ax.set_xticks(tol)
    ax.set_xticklabels([f"±{t:g} s" for t in tol])
    ax.set_xlabel("tolerance δ (window τ ± δ)")
    ax.set_ylabel("T1 joint time–tool accuracy (%)")
    ax.set_ylim(-5, 105)
    ax.grid(alpha=0.3)
    ax.set_title(f"Score by tolerance, {_scene_words(curves)}\n(95% cluster-bootstrap intervals)")
    if len(curves):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    else:
        ax.text(0.5, 0.5, "no T1 targets in these runs", ha="center", transform=ax.transAxes)
    return _save(fig, out, name)


def _scene_words(curves: pd.DataFrame) -> str:
    """The conditions a tolerance figure shows, named only when present."""
    scenes = set(curves["scene"]) if len(curves) else set()
    if scenes >= {"full", "none"}:
        return "with and without scene input"
    return "request only (no scene input)" if scenes == {"none"} else "with scene input"


def sequence_figure(
    panels: list[dict[str, Any]], out: Path, name: str = "fig_sequences"
) -> list[Path]:
    """Figure 6: per run and sequence group, step-k coverage (episodes with step k matched, of n)
    and complete sequences, observed vs the permutation expectation with its 95 % reference
    interval. ``panels``: dicts ``run, task, k, outcomes`` (n × K 0/1) and ``perm``."""
    plt = _plt()
    if not panels:
        fig, ax = plt.subplots(figsize=(5, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, "no multi-step episodes in these runs", ha="center", va="center")
        return _save(fig, out, name)
    cols = min(3, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), squeeze=False)
    for ax, p in zip(axes.ravel(), panels, strict=False):
        x = p["outcomes"]
        n, k = x.shape
        perm = p["perm"]
        vals = [int(v) for v in x.sum(axis=0)] + [perm.observed]
        labels = [f"step {j + 1}\n{v}/{n}" for j, v in enumerate(vals[:k])]
        labels.append(f"complete\n{perm.observed}/{n}")
        ax.bar(range(k + 1), vals, color=["#4c72b0"] * k + ["#dd8452"], width=0.6)
        ax.errorbar(
            [k + 0.42],
            [perm.expected],
            yerr=[[perm.expected - perm.low], [perm.high - perm.expected]],
            fmt="D",
            color="black",
            capsize=4,
            markersize=5,
            label=f"permutation E = {perm.expected:.2f}, 95% ref. [{perm.low:g}, {perm.high:g}]",
        )
        ax.set_xticks(range(k + 1))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_xlim(-0.5, k + 0.7)
        ax.set_ylim(0, max(n, 1) * 1.05)
        ax.set_ylabel("episodes")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)
        ax.set_title(f"{p['run']}\n{p['task']}, {n} episode(s) × {k} steps", fontsize=9)
    for ax in axes.ravel()[len(panels) :]:
        ax.axis("off")
    fig.suptitle("Step coverage and complete sequences vs permutation reference", fontsize=11)
    fig.tight_layout()
    return _save(fig, out, name)
