"""``mantispy build --frontier 0.01,0.05,0.2,1``: one profile, one predictor per evaluator-cost budget,
and the trade-off between them as a table and a plot, so a user picks the budget.

Every budget's build shares the work folder, so the campaign is profiled once (later builds reuse its
runs) and the calls observed for hybrid slicing are recorded once. Each predictor lands in
``OUT/max-cost-B``; ``OUT/frontier.json`` holds the rows, ``OUT/frontier.md`` the table and
``OUT/frontier.svg`` a plot of held-out median error against the evaluator's measured cost, one line
per metric, with the black box as a dashed line.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

from mantispy.build_record import BuildRecord, EvaluatorRecord
from mantispy.errors import BuildError

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")


def parse_budgets(text: str) -> list[float]:
    """``0.01,0.05,0.2,1`` -> [0.01, 0.05, 0.2, 1.0]; ValueError with a one-line reason otherwise."""
    budgets = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"--frontier: {part.strip()!r} is not a number; give budgets like 0.01,0.05,0.2,1") from None
        if not 0 < value <= 10 or not math.isfinite(value):
            raise ValueError(f"--frontier: {value:g} is outside (0, 10]; budgets are fractions of the run time")
        budgets.append(value)
    if not budgets:
        raise ValueError("--frontier: give at least one budget, e.g. 0.01,0.05,0.2,1")
    return sorted(set(budgets))


def frontier_row(budget: float, record: BuildRecord, out: Path) -> dict[str, Any]:
    """One budget's line: per metric the held-out error and the black box's, and the evaluator's cost."""
    evaluator = record.evaluator or EvaluatorRecord()
    return {
        "max_cost": budget,
        "predictor": str(out),
        "evaluator_median_fraction": evaluator.median_fraction if evaluator.features else 0.0,
        "evaluator_features": len([f for f in evaluator.features if f != evaluator.input_check]),  # the models'
        "input_check": evaluator.input_check,
        "model_features": len(record.features),
        "metrics": {m: {"median_rel_error": d.validation.get("median_rel_error"),
                        "blackbox": d.validation.get("blackbox", {}).get("median_rel_error"),
                        "interval_coverage": d.validation.get("interval_coverage"),
                        "noise_floor": record.noise_floor(m),
                        "constant": d.is_constant}
                    for m, d in record.metrics.items()},
    }


def run_frontier(options, budgets: list[float], build: Callable[..., BuildRecord],
                 log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Build one predictor per budget under ``options.out``; write frontier.json/.md/.svg there, after each
    budget: a build that fails leaves the frontier of the budgets built before it (its error says so)."""
    root = Path(options.out)
    root.mkdir(parents=True, exist_ok=True)
    work = options.work
    rows: list[dict[str, Any]] = []
    for budget in budgets:
        out = root / f"max-cost-{budget:g}"
        log(f"frontier: building the predictor for --max-cost {budget:g} into {out}")
        try:
            record = build(dataclasses.replace(options, out=out, max_cost=budget, work=work), log=log)
        except BuildError as exc:
            kept = f"; the frontier of the {len(rows)} budget(s) built before it is in {root}" if rows else ""
            raise BuildError(f"--max-cost {budget:g}: {exc}{kept}") from exc
        rows.append(frontier_row(budget, record, out))
        _write(root, rows)
    return rows


def _write(root: Path, rows: list[dict[str, Any]]) -> None:
    for name, text in (("frontier.json", json.dumps({"rows": rows}, indent=1) + "\n"),
                       ("frontier.md", "\n".join(table_lines(rows)) + "\n"), ("frontier.svg", plot(rows))):
        tmp = root / f"{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(root / name)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The frontier as a Markdown table: one row per budget, each metric's error beside the black box's and
    the campaign's noise floor (no error can be judged below it)."""
    metrics = list(rows[0]["metrics"]) if rows else []
    head = ["max cost", "evaluator cost (median)", "features"] + [f"{m} (black box) noise floor" for m in metrics]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in rows:
        cells = [f"{row['max_cost']:g}", _pct(row["evaluator_median_fraction"]), str(row["model_features"])]
        for m in metrics:
            data = row["metrics"][m]
            cells.append(f"{_pct(data['median_rel_error'])} ({_pct(data['blackbox'])})"
                         + (" constant" if data["constant"] else "")
                         + (f" floor {_pct(data['noise_floor'])}" if data.get("noise_floor") is not None else ""))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def plot(rows: list[dict[str, Any]], width: int = 640, height: int = 400) -> str:
    """A self-contained SVG: held-out median error (y) against evaluator cost (x, log scale)."""
    left, right, top, bottom = 70, 160, 20, 50
    points = [(max(r["evaluator_median_fraction"] or 0.0, 1e-4), r) for r in rows]
    xs = [x for x, _ in points] or [1e-3, 1e-1]
    lo, hi = math.log10(min(xs)) - 0.2, math.log10(max(xs)) + 0.2
    errors = [v for _, r in points for d in r["metrics"].values() for v in (d["median_rel_error"], d["blackbox"])
              if v is not None] or [0.0, 1.0]
    ymax = max(errors) * 1.1 or 1.0

    def sx(x: float) -> float:
        return left + (math.log10(x) - lo) / (hi - lo) * (width - left - right)

    def sy(y: float) -> float:
        return height - bottom - y / ymax * (height - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
             'font-size="12"><rect width="100%" height="100%" fill="white"/>',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="black"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>',
             f'<text x="{(left + width - right) / 2}" y="{height - 10}" text-anchor="middle">evaluator cost '
             '(median share of the run time, log scale)</text>',
             f'<text x="15" y="{(top + height - bottom) / 2}" transform="rotate(-90 15 {(top + height - bottom) / 2})" '
             'text-anchor="middle">held-out median relative error</text>']
    for k in range(5):
        y = ymax * k / 4
        parts.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.0%}</text>')
    for x, row in points:
        parts.append(f'<text x="{sx(x):.1f}" y="{height - bottom + 16}" text-anchor="middle">{x:.1%}</text>')
    metrics = list(rows[0]["metrics"]) if rows else []
    for n, metric in enumerate(metrics):
        colour = COLOURS[n % len(COLOURS)]
        for key, dash in (("median_rel_error", ""), ("blackbox", ' stroke-dasharray="4 3"')):
            line = [(sx(x), sy(r["metrics"][metric][key])) for x, r in points if r["metrics"][metric][key] is not None]
            if len(line) > 1:
                path = " ".join(f"{a:.1f},{b:.1f}" for a, b in line)
                parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}"{dash}/>')
            if key == "median_rel_error":
                parts += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{colour}"/>' for a, b in line]
        parts.append(f'<text x="{width - right + 10}" y="{top + 16 * (n + 1)}" fill="{colour}">{escape(metric)}</text>')
    parts.append(f'<text x="{width - right + 10}" y="{top + 16 * (len(metrics) + 2)}">dashed: black box</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
