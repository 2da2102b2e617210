"""The overhead budget of the paper's §3.2: remove instrumentation from the hottest sites until the
instrumented program costs at most ``budget`` more than the original on the calibration inputs.

Procedure: instrument everything; run each calibration input on the original and on the instrumented
tree, interleaved, in every round (CPU time, best of ``repeats`` each, so a fresh baseline judges each
round) and read the dynamic count of every site from the features of the
same runs (a counter's count is its executions; a value site executes as often as the counter of its
region). While the measured overhead exceeds 60 % of the budget (run-to-run noise on a shared machine
is a few per cent, so stopping just under the budget would often land above it), estimate the cost of one probe execution from the
measured overhead, drop sites in decreasing order of dynamic count until the remaining probe
executions fit in the budget (with a safety margin), re-instrument without them and measure again.
Dynamic counts come from the first, fully instrumented round, when every counter is present.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from mantispy.core.launch import Measurement, program_argv, program_env, run_measured

from .manifest import Manifest, Removal, manifest_path
from .transformer import Options
from .tree import InstrumentError, TreeResult, check_paths, instrument_tree, replace_dir

COUNTER_KINDS = ("loop", "branch", "call", "exception")
MARGIN = 0.5  # remove sites until the estimated overhead is half the budget
STOP = 0.6  # and keep going while the measured overhead is above 60 % of it: timings are noisy (a few %)
MAX_ROUNDS = 6

Measure = Callable[[Path, Sequence[str], Path | None], Measurement]


@dataclass
class Round:
    """One calibration measurement of the instrumented tree."""

    round: int
    original_cpu_s: float
    instrumented_cpu_s: float
    overhead: float
    active_sites: int
    removed: int = 0


@dataclass
class BudgetResult:
    """The final tree and the rounds that led to it."""

    tree: TreeResult
    rounds: list[Round] = field(default_factory=list)
    met: bool = False


def default_measure(root: Path, invocation: Sequence[str], features_out: Path | None) -> Measurement:
    """Run ``invocation`` against ``root`` quietly and measure it."""
    return run_measured(program_argv(root, invocation), program_env(root, features_out), quiet=True)


def _measure_pair(measure: Measure, original_root: Path, out: Path, invocation: Sequence[str], repeats: int,
                  features_out: Path) -> tuple[float, float]:
    """Best CPU time of the original and of the instrumented program, runs interleaved so that drift
    of the machine's speed hits both alike."""
    best_original = best_instrumented = float("inf")
    for _ in range(repeats):
        for root, features in ((original_root, None), (out, features_out)):
            m = measure(root, invocation, features)
            if m.returncode != 0:
                where = "original" if features is None else "instrumented"
                raise InstrumentError(
                    f"calibration input {' '.join(invocation)!r} exits with status {m.returncode} on the {where} "
                    "program; give inputs the program accepts"
                )
            if features is None:
                best_original = min(best_original, m.cpu_s)
            else:
                best_instrumented = min(best_instrumented, m.cpu_s)
    return best_original, best_instrumented


def site_counts(manifest: Manifest, features: dict[str, float]) -> dict[str, int]:
    """Dynamic executions of every instrumented site (counter ids and value-site ids)."""
    counts = {f.id: int(features.get(f.id, 0)) for f in manifest.features
              if f.kind in COUNTER_KINDS and f.id not in manifest.derived}  # a derived count has no probe to remove
    for site in manifest.value_sites:
        counts[site.id] = int(features.get(site.region, 0)) if site.region else 1  # a region may be derived
    return counts


def choose_removals(counts: dict[str, int], allowed_events: float) -> list[str]:
    """Hottest sites first, until the executions left fit in ``allowed_events`` (at least one site)."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    remaining = sum(counts.values())
    removed: list[str] = []
    for site, count in ranked:
        if remaining <= allowed_events and removed:
            break
        if count == 0:
            break
        removed.append(site)
        remaining -= count
    return removed


def instrument_within_budget(
    src: Path,
    out: Path,
    options: Options,
    budget: float,
    invocations: Sequence[Sequence[str]],
    exclude: list[str] | None = None,
    force: bool = False,
    repeats: int = 5,
    measure: Measure = default_measure,
    log: Callable[[str], None] = lambda _msg: None,
) -> BudgetResult:
    """Instrument ``src`` into ``out`` with overhead at most ``budget`` (0.05 = 5 %) on ``invocations``."""
    if budget < 0:
        raise InstrumentError("--budget must be >= 0 (0.05 means 5 % overhead)")
    if not invocations:
        raise InstrumentError("--budget needs at least one --calibrate input to measure the overhead on")
    check_paths(Path(src), Path(out), force)
    # Calibrate in a staging folder: OUT is replaced only when everything succeeded.
    final_out, out = Path(out), Path(out).with_name(f".{Path(out).name}.calibrating-{os.getpid()}")
    try:
        result = _calibrate(src, out, options, budget, invocations, exclude, repeats, measure, log)
        replace_dir(out, final_out)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    result.tree.out_dir = final_out
    return result


def _calibrate(
    src: Path,
    out: Path,
    options: Options,
    budget: float,
    invocations: Sequence[Sequence[str]],
    exclude: list[str] | None,
    repeats: int,
    measure: Measure,
    log: Callable[[str], None],
) -> BudgetResult:
    tree = instrument_tree(src, out, options, exclude, force=True)
    original_root = Path(tree.manifest.source_root)
    counts0: dict[str, int] | None = None
    disabled: set[str] = set(options.disabled)
    removals: list[Removal] = []
    result = BudgetResult(tree)
    with tempfile.TemporaryDirectory(prefix="mantis-calibrate-") as tmp:
        for round_no in range(MAX_ROUNDS + 1):
            original = instrumented = 0.0
            features: dict[str, float] = {}
            for n, inv in enumerate(invocations):
                features_file = Path(tmp) / f"features-{round_no}-{n}.json"
                pair = _measure_pair(measure, original_root, out, inv, repeats, features_file)
                original += pair[0]
                instrumented += pair[1]
                if features_file.exists():
                    for key, value in json.loads(features_file.read_text()).items():
                        features[key] = features.get(key, 0) + value
            if counts0 is None:
                counts0 = site_counts(tree.manifest, features)
            active = {site: counts0.get(site, 0) for site in site_counts(tree.manifest, {})}
            overhead = instrumented / original - 1 if original > 0 else 0.0
            rnd = Round(round_no, original, instrumented, overhead, len(active))
            result.rounds.append(rnd)
            log(f"round {round_no}: overhead {overhead:+.1%} with {len(active)} sites")
            result.met = overhead <= budget
            if overhead <= budget * STOP:
                break
            events = sum(active.values())
            if round_no == MAX_ROUNDS or events == 0:
                break
            per_event = (instrumented - original) / events
            allowed = budget * original * MARGIN / per_event
            chosen = choose_removals(active, allowed)
            rnd.removed = len(chosen)
            for rank, site in enumerate(chosen, 1):
                kind = "value-site" if ":assign:" in site else "counter"
                removals.append(
                    Removal(
                        id=site,
                        site=kind,
                        dynamic_count=active[site],
                        round=round_no,
                        reason=(
                            f"budget {budget:.1%}: overhead was {overhead:+.1%}; "
                            f"{active[site]} executions on the calibration inputs (rank {rank} of {len(active)})"
                        ),
                    )
                )
            disabled.update(chosen)
            tree = instrument_tree(src, out, replace(options, disabled=frozenset(disabled)), exclude, force=True)
            result.tree = tree
    manifest = tree.manifest
    manifest.removed = removals
    manifest.calibration = {
        "budget": budget,
        "invocations": [list(inv) for inv in invocations],
        "repeats": repeats,
        "metric": "cpu_s (user+sys, best of repeats, summed over inputs)",
        "rounds": [vars(r) for r in result.rounds],
        "final_overhead": result.rounds[-1].overhead,
        "met": result.met,
    }
    manifest.save(manifest_path(out))
    return result
