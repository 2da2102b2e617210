"""Prediction intervals across train/test splits: how often the p10-p90 interval holds held-out runs.

One build's held-out coverage rests on few inputs (the demo holds out 20), so it says little about the
interval method. This benchmark refits a build's models on stored runs over several train/test splits
and pools the coverage: the shipped split-conformal quantiles of out-of-fold log(actual / predicted)
against empirical quantiles and a t interval on the same residuals (their mean and standard deviation,
or their median and MAD), and the binomial range a calibrated interval's coverage falls in on as many
held-out inputs.

    python benchmarks/bench_intervals.py --builds demo-out [OTHER_DEMO_OUT ...] [--splits 5]

Each build folder is a ``make demo`` output (``work/mantis.db``, ``work/content.json``,
``predictors/minisearch/models.json``); every fit uses the build's own excluded features and content
features, with the split's seed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from results import publish  # noqa: E402

from mantispy.content.stage import chosen_columns  # noqa: E402
from mantispy.content.types import read_table  # noqa: E402
from mantispy.modeling.fitting import FitRequest, fit_campaign  # noqa: E402
from mantispy.modeling.selection import coverage_range  # noqa: E402
from mantispy.store import RunStore  # noqa: E402

METRICS = ("cpu_s", "wall_s", "work_s", "max_rss_kb")
LEVELS = (0.1, 0.9)


def empirical(ratios: np.ndarray) -> tuple[float, float]:
    """Plain sample quantiles at the levels."""
    return float(np.quantile(ratios, LEVELS[0])), float(np.quantile(ratios, LEVELS[1]))


def t_interval(centre: float, spread: float, n: int) -> tuple[float, float]:
    """A Student-t prediction interval for one new value at the levels."""
    z = stats.t.ppf(LEVELS[1], n - 1) * math.sqrt(1 + 1 / n)
    return centre - z * spread, centre + z * spread


def t_on_sd(ratios: np.ndarray) -> tuple[float, float]:
    """t interval on the residuals' mean and standard deviation."""
    return t_interval(float(np.mean(ratios)), float(np.std(ratios, ddof=1)), len(ratios))


def t_on_mad(ratios: np.ndarray) -> tuple[float, float]:
    """t interval on the residuals' median and scaled MAD."""
    centre = float(np.median(ratios))
    return t_interval(centre, 1.4826 * float(np.median(np.abs(ratios - centre))), len(ratios))


ALTERNATIVES = {"empirical quantiles": empirical, "t on mean and sd": t_on_sd, "t on median and MAD": t_on_mad}


def fit_split(build: Path, metric: str, seed: int) -> dict:
    """One fit of one metric on one split; the held-out log ratios and the interval's residuals."""
    models = json.loads((build / "predictors/minisearch/models.json").read_text())["metrics"]
    content_file = build / "work/content.json"
    extra = chosen_columns(read_table(content_file)) if content_file.exists() else {}
    request = FitRequest(metric=metric, degree=3, train_fraction=0.5, seed=seed,
                         exclude=tuple(models[metric]["training"]["excluded"]), sensitivity=False,
                         metrics_from="original", extra_features=extra)
    with RunStore(build / "work/mantis.db") as store:
        model = fit_campaign(store, None, request)
    held = model["evaluation"]["test_predictions"]
    band = model["interval"]
    return {"held_out": [math.log(p["actual"] / p["predicted"]) for p in held], "oof": band["log_ratios"],
            "shipped": (math.log(band["low"]), math.log(band["high"]))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", nargs="+", type=Path, required=True, help="make demo output folders")
    parser.add_argument("--splits", type=int, default=5, help="train/test splits per build (seeds 0..N-1)")
    parser.add_argument("--no-write", action="store_true", help="print, do not touch RESULTS.md")
    args = parser.parse_args(argv)
    coverage: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    held_counts = []
    for build in args.builds:
        for metric in METRICS:
            for seed in range(args.splits):
                fitted = fit_split(build, metric, seed)
                held = np.array(fitted["held_out"])
                held_counts.append(len(held))
                oof = np.array(fitted["oof"])
                bands = {"split-conformal (shipped)": fitted["shipped"],
                         **{name: method(oof) for name, method in ALTERNATIVES.items()}}
                for name, (low, high) in bands.items():
                    coverage[name][metric].append(float(np.mean((held >= low) & (held <= high))))
                print(f"{build} {metric} split {seed}: shipped {coverage['split-conformal (shipped)'][metric][-1]:.0%}",
                      flush=True)
    n = int(np.median(held_counts))
    low, high = coverage_range(n, LEVELS[1] - LEVELS[0])
    rng = np.random.default_rng(0)
    calibrated = rng.binomial(n, LEVELS[1] - LEVELS[0], 100_000) / n
    fits = len(held_counts)
    lines = [f"Command: `python benchmarks/bench_intervals.py --builds ... --splits {args.splits}`: {len(args.builds)} "
             f"`make demo` builds (their stored runs), {len(METRICS)} metrics, {args.splits} train/test splits each "
             f"({fits} fits, {n} held-out inputs per fit). Coverage: the share of held-out inputs whose actual value "
             "lies in the p10-p90 interval; mean over fits (standard deviation), and the share of fits whose coverage "
             f"fell in the issue's 75-85 % band. A calibrated interval on {n} inputs: mean 80 %, sd "
             f"{calibrated.std():.0%}, in 75-85 % in {np.mean((calibrated >= 0.75) & (calibrated <= 0.85)):.0%} of "
             f"fits, within {low:.0%}-{high:.0%} 19 times in 20.", "",
             "| method | " + " | ".join(METRICS) + " | all | all in 75-85 % |", "|---|" + "---|" * (len(METRICS) + 2)]
    for name, by_metric in coverage.items():
        pooled = np.array([c for values in by_metric.values() for c in values])
        cells = [f"{np.mean(by_metric[m]):.0%} ({np.std(by_metric[m]):.0%})" for m in METRICS]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {pooled.mean():.0%} ({pooled.std():.0%}) | "
                     f"{np.mean((pooled >= 0.75) & (pooled <= 0.85)):.0%} |")
    publish("bench_intervals", "Prediction intervals across train/test splits (issue 17)", lines,
            write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
