"""Hybrid slicing (issue 6, beyond the paper): observed calls resolve what static inference cannot.

Profiling can record which callee each call site of the program actually reached
(:mod:`mantispy.runtime.observed_calls`, once per site/callee pair). :class:`Observations` reads those
records and, given to the SDG builder (``SliceSession(src, entry, observed_calls=...)``), changes only
the call sites the static call graph left *unresolved* (``CallGraph.unresolved``): instead of the
conservative name-based fallback (every program function of that name), such a site calls

* the callees observed at that site (its exact ``ast.Call`` span), plus
* generator functions of the name the site calls (``f`` in ``x.f(...)``) that ran although their
  creating call was not seen (3.11 cannot see generator creation; see the recorder),

provided the site itself ran a call in the observed runs (``reached``); a site that never ran keeps the
name-based fallback (with ``unreached="drop"``, a site that never ran in a unit that did gets no program
callee: smaller slices, and more of them wrong on inputs that take new paths). Resolved edges are never dropped, and partly resolved sites keep their static
callees. A site that ran but only ever called code outside the program (``m.group()`` on a regex
match) gets no program callee.

Observed behaviour is not proof: an input that takes a path no observed run took may reach a callee
never observed. :func:`validate_hybrid` therefore runs every hybrid evaluator on held-out inputs (inputs
whose runs contributed no observations) against the instrumented program, and a hybrid slice that
disagrees falls back to the static slice, with the reason recorded.

Reading, binding and mapping observations lives in :mod:`mantispy.slicer.observations`; this module
builds hybrid sessions and validates their slices.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .evaluators import EvaluatorError, SliceSession, check_fidelity
from .observations import Observations


def hybrid_session(static, observations, unreached: str | None = None):
    """A SliceSession using ``observations``, sharing the program and call graph of ``static`` (a
    SliceSession): only the SDG is built again. ``unreached``: see :attr:`Observations.unreached`."""
    return SliceSession(static.program.root, static.entry, reuse=static,
                        observed_calls=Observations.coerce(observations, unreached))


@dataclass
class HybridVerdict:
    """Static against hybrid slice for one feature, and whether the hybrid one can be trusted."""

    feature: str
    kind: str
    static_kept: int = 0
    hybrid_kept: int = 0
    statements_total: int = 0
    same_slice: bool = False
    inputs: int = 0  # held-out inputs the hybrid evaluator ran on
    agreed: int = 0
    trusted: bool = False
    use: str = "static"  # which slice to use: "hybrid" or "static"
    reason: str = ""
    observed_sites: list[str] = field(default_factory=list)  # sites of the hybrid slice resolved dynamically
    mismatches: list[dict[str, Any]] = field(default_factory=list)

    @property
    def hybrid_fidelity(self) -> float | None:
        """Share of held-out inputs on which the hybrid evaluator agreed (None: not run, same slice)."""
        return self.agreed / self.inputs if self.inputs else None

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {**asdict(self), "hybrid_fidelity": self.hybrid_fidelity}


def validate_hybrid(session_static, hybrid, src: Path, features: list[str], held_out_inputs: list[list[str]],
                    cwd: Path | None = None, keep: Path | None = None, check_same: bool = False) -> list[HybridVerdict]:
    """Validate hybrid slices before they are trusted.

    ``hybrid`` is a SliceSession built with observations, or the observations themselves (an
    :class:`Observations`, a path or a JSON document). For each feature the hybrid slice is compared
    with the static one; when they differ, the hybrid evaluator is emitted and run on every held-out
    input and compared with the fully instrumented program (:func:`evaluators.check_fidelity`). A
    hybrid slice that fails or disagrees on any input is not trusted: the verdict says to use the
    static slice, and why. Identical slices are trusted as they are (``check_same`` runs them too).
    Inputs that contributed observations are not held out: they are left out, with a note in each
    verdict's reason when that leaves none."""
    if not hasattr(hybrid, "sdg"):
        hybrid = hybrid_session(session_static, hybrid)
    observations = hybrid.observed_calls
    held_out = [list(a) for a in held_out_inputs if not (observations is not None and observations.contributed(a))]
    verdicts: list[HybridVerdict] = []
    to_run: list[str] = []
    for fid in features:
        info = session_static.features.get(fid, {})
        verdict = HybridVerdict(fid, info.get("kind", "?"))
        verdicts.append(verdict)
        try:
            static = session_static.slice(fid)
        except EvaluatorError as exc:
            verdict.reason = f"no static slice: {exc}"
            continue
        verdict.static_kept, verdict.statements_total = static.statements_kept, static.statements_total
        try:
            result = hybrid.slice(fid)
        except EvaluatorError as exc:
            verdict.reason = f"no hybrid slice: {exc}"
            continue
        verdict.hybrid_kept = result.statements_kept
        verdict.observed_sites = [o["site"] for o in result.extra.get("calls_observed", [])]
        verdict.same_slice = result.kept == static.kept and result.keep_units == static.keep_units
        if verdict.same_slice and not check_same:
            verdict.trusted, verdict.use, verdict.reason = True, "hybrid", "same slice as the static one"
            continue
        if not held_out:
            verdict.reason = ("no held-out input: every input given contributed observations" if held_out_inputs
                              else "no held-out input given")
            continue
        to_run.append(fid)
    if to_run:
        rows = {r.feature: r for r in check_fidelity(hybrid, Path(src), held_out, to_run, cwd=cwd, keep=keep)}
        for verdict in verdicts:
            row = rows.get(verdict.feature)
            if row is None:
                continue
            verdict.inputs, verdict.agreed, verdict.mismatches = row.inputs, row.agreed, row.mismatches
            if row.status == "sliceable":
                verdict.trusted, verdict.use = True, "hybrid"
                verdict.reason = f"agrees with the instrumented program on {row.inputs} held-out input(s)"
            else:
                verdict.reason = f"falls back to the static slice: hybrid {row.reason}"
    return verdicts


def describe_inputs(inputs: list[list[str]]) -> str:
    return ", ".join(repr(shlex.join(a)) for a in inputs)
