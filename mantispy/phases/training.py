"""The training set of per-phase models: a campaign's sampled, uninstrumented runs and what they measured.

``mantispy profile SPEC --sample`` stores a recording of every run beside the campaign's run tables. The
uninstrumented (original) runs are the ones whose time is the program's own, so they are the training
runs; each gets its input's descriptor numbers (the black box's view) and the feature counts its input's
instrumented run recorded (the program's view).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

from mantispy.runtime.descriptors import prefixed_numbers
from mantispy.sampling.store import RecordingStore
from mantispy.sampling.types import Recording

from .detect import Known, PhaseOptions
from .model import PhaseModelError, Program, TrainingRun, whole_run
from .observe import PhaseDataError, observe

ORIGINAL, INSTRUMENTED = "original", "instrumented"


class CampaignLink:
    """The campaign side of recordings: which run a recording is, its input's descriptor and features."""

    def __init__(self, store_path: Path, campaign_name: str | None = None) -> None:
        from mantispy.store import RunStore, StoreError

        try:
            with RunStore(store_path, create=False) as runs:
                campaigns = runs.campaigns()
                if campaign_name is not None:
                    chosen = [c for c in campaigns if c.name == campaign_name]
                    if not chosen:
                        raise PhaseModelError(f"{store_path}: no campaign named {campaign_name!r} "
                                              f"(it has {', '.join(c.name for c in campaigns) or 'none'})")
                elif not campaigns:
                    raise PhaseModelError(f"{store_path}: holds no campaign (only recorded runs); per-phase models "
                                          "are fitted on a campaign profiled with mantispy profile SPEC --sample")
                elif len(campaigns) != 1:
                    raise PhaseModelError(f"{store_path}: {len(campaigns)} campaigns; name one with --campaign")
                else:
                    chosen = campaigns
                self.campaign = chosen[0]
                self.descriptors = runs.inputs(self.campaign)
                rows = runs.runs(self.campaign)
                self.run_input = {row["run_id"]: row["input_id"] for row in rows}
                self.run_variant = {row["run_id"]: row["variant"] for row in rows}
                self.run_ok = {row["run_id"]: row["status"] == "ok" for row in rows}
                self.features = _median_features(runs, self.campaign)
        except StoreError as exc:
            raise PhaseModelError(str(exc)) from None
        self.entry = str(self.campaign.spec.get("entry", "")) if isinstance(self.campaign.spec, dict) else ""

    def inputs_of(self, run_id: int) -> dict[str, float]:
        """The ``input:`` numbers of a run's input."""
        return prefixed_numbers(self.descriptors.get(self.run_input[run_id], {}))

    def features_of(self, run_id: int) -> dict[str, float]:
        """The feature counts of a run's input (its instrumented runs', median over repeats)."""
        return self.features.get(self.run_input[run_id], {})


def _median_features(runs, campaign) -> dict[str, dict[str, float]]:
    frame = runs.dataframe(campaign, variant=INSTRUMENTED)
    if frame.empty:
        return {}
    columns = [c for c in frame.columns if c not in ("input_id", "repeat", "status")
               and not c.startswith(("metric:", "input:"))]
    out: dict[str, dict[str, float]] = {}
    for input_id, group in frame.groupby("input_id"):
        medians = group[columns].median()
        out[str(input_id)] = {name: float(value) for name, value in medians.items() if value}
    return out


def campaign_training(store_path: Path, campaign_name: str | None, options: PhaseOptions, known: Known,
                      log: Callable[[str], None] = lambda _m: None) -> tuple[list[TrainingRun], Program]:
    """The training runs of a campaign profiled with --sample (phases labelled through ``known``)."""
    link = CampaignLink(store_path, campaign_name)
    training: list[TrainingRun] = []
    skipped: list[str] = []
    functions: set[str] = set()
    with RecordingStore(store_path, create=False) as store:
        recordings = [rec for rec in store.recordings()
                      if rec.run_id in link.run_variant and link.run_variant[rec.run_id] == ORIGINAL and link.run_ok[rec.run_id]]
        if not recordings:
            raise PhaseModelError(f"{store_path}: campaign {link.campaign.name!r} has no sampled uninstrumented run; "
                                  "profile it with mantispy profile SPEC --sample")
        for recording in recordings:
            try:
                phases = observe(store, recording, options, known)
            except PhaseDataError as exc:
                skipped.append(str(exc))
                continue
            for row in phases.phases:
                functions.update(row["profile"])
            assert recording.run_id is not None
            training.append(TrainingRun(link.run_input[recording.run_id], link.inputs_of(recording.run_id),
                                        link.features_of(recording.run_id), phases, whole_run(phases),
                                        recording_id=recording.id))
    if skipped:
        log(f"{len(skipped)} recording(s) left out: {skipped[0]}")
    sampling = {"rate": statistics.median(r.rate for r in recordings), "interval": statistics.median(r.interval for r in recordings),
                "mode": recordings[0].mode, "sampler": recordings[0].sampler}
    return training, Program(entry=link.entry, campaign=link.campaign.name, functions=sorted(functions), sampling=sampling)


def recording_inputs(recording: Recording, link: CampaignLink | None) -> tuple[dict[str, float], dict[str, float], str]:
    """The input numbers and feature counts a check uses for a recording, and where they came from: the
    campaign's input when the recording is one of its runs, else the recorded command's arguments."""
    from mantispy.runtime.descriptors import describe_input

    if link is not None and recording.run_id is not None and recording.run_id in link.run_input:
        return link.inputs_of(recording.run_id), link.features_of(recording.run_id), \
            f"input {link.run_input[recording.run_id]!r} of campaign {link.campaign.name!r}"
    command = list(recording.command)
    args = command[2:] if command[:1] == ["-m"] else command[1:]
    cwd = recording.cwd or None
    try:
        descriptor = describe_input(args, cwd=cwd)
    except OSError as exc:
        raise PhaseDataError(f"recording {recording.id}: cannot read its input file {exc.filename} ({exc.strerror}); "
                             "check it where the files still are") from None
    where = "the recorded command's arguments" + ("" if cwd else " (files relative to the current folder)")
    return prefixed_numbers(descriptor), {}, where

