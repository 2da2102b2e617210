"""Observed calls for hybrid slicing (issue 6): recording them during ``mantispy run`` and ``mantispy
profile --observe-calls``, and the CLI reports of ``mantispy slice`` / ``mantispy fidelity`` with
``--observed-calls``.

Recording runs the program under ``python -m mantispy.runtime.observed_calls`` (the recorder of
:mod:`mantispy.runtime.observed_calls`). A profiling campaign records in separate, untimed runs of the
*original* source after its timed runs, so the stored measurements never include the recorder; the
observations go to ``<store>.<campaign>.calls.json`` beside the store, with the ids of the inputs
whose runs contributed (every other input of the campaign is held out for validation).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from mantispy.runtime import observed_calls as recorder

LAUNCHER = ["-m", "mantispy.runtime.observed_calls"]


def recording_argv(argv: list[str]) -> list[str]:
    """``[python, SCRIPT|-m MODULE, ARGS...]`` run under the recorder."""
    return [argv[0], *LAUNCHER, *argv[1:]]


def recording_env(root: Path, out: Path, packages: dict[str, Path] | None = None) -> dict[str, str]:
    """Environment entries that make the recorder write ``out`` for the program under ``root`` and the
    installed ``packages`` ({name: folder or module file}) it includes."""
    env = {recorder.ENV_OUT: str(Path(out).resolve()), recorder.ENV_ROOT: str(Path(root).resolve())}
    if packages:
        env[recorder.ENV_PACKAGES] = json.dumps({name: str(where) for name, where in sorted(packages.items())})
    return env


def calls_file(store_path: Path, campaign: str) -> Path:
    """Where ``mantispy profile --observe-calls`` keeps a campaign's observed calls."""
    return Path(f"{store_path}.{campaign}.calls.json")


def observe_campaign(spec, store_path: Path, limit: int = 10, jobs: int = 1,
                     log: Callable[[str], None] = lambda _m: None) -> tuple[Path, dict[str, Any]]:
    """Re-run up to ``limit`` of the campaign's inputs (spread over the list, in spec order) on the
    original source with the recorder on, untimed and unstored, and write their merged observations
    (replacing earlier ones) to :func:`calls_file`. The installed packages a bytecode-backend campaign
    includes are recorded too, named as in its view. Returns (that path, the document)."""
    from mantispy.monitoring.view import package_locations
    from mantispy.profiler import ORIGINAL, make_task, run_tasks

    inputs = list(spec.inputs)
    if limit < len(inputs):
        step = len(inputs) / limit
        inputs = [inputs[int(i * step)] for i in range(limit)]
    dest = calls_file(store_path, spec.name)
    root = spec.source_root
    packages = package_locations(spec)
    with tempfile.TemporaryDirectory(prefix="mantis-calls-") as tmp:
        raw = Path(tmp) / "calls.json"
        tasks = []
        for record in inputs:
            task = make_task(spec, record, 0, ORIGINAL, root)
            tasks.append(replace(task, argv=recording_argv(task.argv), env={**task.env, **recording_env(root, raw, packages)},
                                 timeout=spec.timeout * 5))
        done = []
        for result in run_tasks(tasks, jobs):
            if result.status == "ok":
                done.append(result.input_id)
            else:
                log(f"input {result.input_id} {result.status} while recording calls: {result.stderr_tail.strip()[-200:]}")
        data = json.loads(raw.read_text()) if raw.exists() else recorder.empty(str(root))
    data["campaign"] = spec.name
    data["inputs"] = sorted(done)
    if dest.exists():
        dest.unlink()
    tmp_dest = dest.with_name(dest.name + ".tmp")
    tmp_dest.write_text(recorder.dumps(data))
    os.replace(tmp_dest, dest)
    return dest, data


def summary_line(data: dict[str, Any], path: Path) -> str:
    return (f"{len(data.get('calls', []))} observed (call site, callee) pairs from {len(data.get('runs', []))} run(s) "
            f"in {path}")


# ---------------------------------------------------------------------- CLI reports
def echo_observed(result, echo: Callable[[str], None], limit: int = 10) -> None:
    """The "calls resolved dynamically" lines of a hybrid slice report."""
    observed = result.extra.get("calls_observed", [])
    echo(f"calls resolved dynamically: {len(observed)}")
    for info in observed[:limit]:
        callees = ", ".join(info["callees"]) or "no program code"
        echo(f"  {info['site']}: {info['text'].splitlines()[0][:60]} -> {callees} "
             f"(static fallback: {len(info['instead_of'])} callee(s))")
    if len(observed) > limit:
        echo(f"  ... and {len(observed) - limit} more (see slice.json: calls_observed)")


def echo_verdicts(verdicts, echo: Callable[[str], None]) -> None:
    """The per-feature table of ``mantispy fidelity --observed-calls``."""
    echo(f"{'trusted':<8}{'static':>8}{'hybrid':>8}{'total':>8}  {'hybrid fidelity':<16} feature / reason")
    for v in verdicts:
        fidelity = "same slice" if v.hybrid_fidelity is None and v.same_slice else (
            "-" if v.hybrid_fidelity is None else f"{v.hybrid_fidelity:.1%} of {v.inputs}")
        echo(f"{'yes' if v.trusted else 'no':<8}{v.static_kept:>8}{v.hybrid_kept:>8}{v.statements_total:>8}  "
             f"{fidelity:<16} {v.feature}")
        if v.reason and not v.same_slice:
            echo(f"{'':<50}{v.reason}")
    trusted = sum(v.trusted for v in verdicts)
    smaller = sum(v.trusted and v.hybrid_kept < v.static_kept for v in verdicts)
    echo(f"{trusted} of {len(verdicts)} hybrid slices trusted ({smaller} smaller than the static slice); "
         "the others fall back to the static slice")
