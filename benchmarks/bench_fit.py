"""Benchmark: fit time of SPORE at the paper's ImageJ size (>= 3000 runs x >= 5000 raw features).

The data are synthetic but shaped like profiles: thousands of counters (Poisson counts, many of them
duplicates or affine copies of each other, as loops and branches of the same code are), a few hundred
mostly-zero columns, some constants, and a metric that is a sparse polynomial of a few counters with 2 %
noise. The run goes through the real store (SQLite) and the real ``fit_campaign``, so loading the
sparse features and all preprocessing are timed too. Writes its section of benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/bench_fit.py [--runs 3000] [--features 5000]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import machine_fingerprint, write_section  # noqa: E402

from mantispy.modeling.fitting import FitRequest, fit_campaign  # noqa: E402
from mantispy.store import RunRecord, RunStore  # noqa: E402


def make_store(path: Path, runs: int, features: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    base = rng.poisson(rng.uniform(1, 400, size=features // 4), size=(runs, features // 4)).astype(float)
    columns = {}
    for j in range(features):
        kind = j % 4
        src = base[:, j // 4]
        if kind == 0:
            columns[f"app/m{j % 50}.py:f{j}:loop:1"] = src
        elif kind == 1:
            columns[f"app/m{j % 50}.py:f{j}:branch:1"] = 2 * src + 1  # an affine twin
        elif kind == 2:
            columns[f"app/m{j % 50}.py:f{j}:call"] = src * rng.uniform(0.5, 1.5, runs)
        else:
            columns[f"app/m{j % 50}.py:f{j}:value:v#1"] = np.where(rng.random(runs) < 0.05, src, 0.0)
    names = list(columns)
    truth = names[0], names[8], names[18]
    a, b, c = (columns[t] for t in truth)
    y = 0.05 + 0.04 * (a * b) / np.mean(a * b) + 0.04 * c / np.mean(c)  # comparable shares
    y = y * (1 + rng.normal(0, 0.02, runs))
    with RunStore(path) as store:
        campaign = store.open_campaign("bench", {"bench": True}, "h", None, {})
        store.add_inputs(campaign, [(f"i{n}", {"argv": [str(n % 7)]}) for n in range(runs)])
        for n in range(runs):
            feats = {k: v[n] for k, v in columns.items() if v[n]}
            store.add_run(campaign, RunRecord(f"i{n}", 0, "instrumented", "ok", 0, {"wall_s": float(y[n])}, feats))
    return list(truth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--features", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        t0 = time.perf_counter()
        truth = make_store(db, args.runs, args.features)
        build = time.perf_counter() - t0
        rows = []
        # (method, solver, form): SPORE's two selection methods, glmnet's solver beside scikit-learn's
        # (skipped without python-glmnet), and the form chosen by cross-validation (7 candidates x 5 folds)
        configs = [("lasso", "sklearn", "polynomial"), ("lasso", "glmnet", "polynomial"),
                   ("foba", "sklearn", "polynomial"), ("lasso", "sklearn", "auto")]
        for method, solver, form in configs:
            if solver == "glmnet" and importlib.util.find_spec("glmnet") is None:
                print("glmnet: python-glmnet is not installed (pip install 'mantispy[glmnet]'); row skipped")
                continue
            with RunStore(db) as store:
                t0 = time.perf_counter()
                model = fit_campaign(store, "bench", FitRequest(train_fraction=0.1, method=method, sensitivity=False,
                                                                solver=solver, form=form))
                seconds = time.perf_counter() - t0
            used = sorted(model["scaling"])
            found = sum(t in used or any(t == a for grp in model["aliases"].values() for a, _ in grp) for t in truth)
            label = f"{method} / {solver} / {form}" + (f" -> {model['selection']['chosen']}" if form == "auto" else "")
            rows.append((label, seconds, model, found))
            print(f"{label}: {seconds:.1f} s, {len(model['terms'])} terms, true features found {found}/3, "
                  f"held-out median error {model['evaluation']['test']['median_rel_error']:.2%}")
    lines = [
        f"Synthetic profile: {args.runs} runs x {args.features} raw features (loops, affine branch twins, noisy call",
        "counts, sparse values), metric = sparse polynomial of 3 counters + 2 % noise; 10 % training. The",
        "input descriptor argv[0] (n mod 7) is a candidate feature too.",
        f"Writing the store took {build:.1f} s (not part of the fit).",
        "",
        "| method / solver / form | fit time (load + preprocess + SPORE) | raw / kept / screened features | terms | true features found | held-out median error |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for method, seconds, model, found in rows:
        t = model["training"]
        lines.append(f"| {method} | {seconds:.1f} s | {t['raw_features']} / {t.get('kept_features', '-')} / "
                     f"{len(t.get('screened', []))} | "
                     f"{len(model['terms'])} | {found}/3 | {model['evaluation']['test']['median_rel_error']:.2%} |")
    write_section("bench_fit", "Model fitting speed (issue 4)", machine_fingerprint(), lines)


if __name__ == "__main__":
    main()
