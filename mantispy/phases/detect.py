"""Phase detection: consecutive epochs that match form a phase; a phase that recurs keeps its label.

Walking the epochs in time order, an epoch that matches the current phase's profile (f_sim and t_sim at
or above their thresholds) extends it. One that does not starts a *candidate*; the candidate becomes a
phase once ``confidence`` consecutive epochs match it (the paper's confidence rule, so that one odd
epoch is not a phase); until then its epochs are absorbed into the current phase if the current phase
resumes; a start shorter than ``confidence`` epochs (start-up, imports) belongs to the phase after it. Each
phase is then compared with the earlier ones: a match reuses the earlier phase's label
(P1, P2, ...), so a run that alternates between two stable behaviours reads P1 P2 P1 P2.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from mantispy.sampling.types import Frame

from .epochs import Epoch
from .similarity import matches


@dataclass(frozen=True)
class PhaseOptions:
    """How phases are found (the paper's defaults where it has one)."""

    epoch_s: float | None = None  # seconds per epoch (None: epoch_samples sampling periods)
    epoch_samples: int = 10  # the paper aggregates an epoch of n thread dumps
    min_share: float = 0.05  # a function on the stack less than this share of an epoch is noise
    f_threshold: float = 0.95  # paper: 0.95
    t_threshold: float = 0.95  # paper: 0.95
    confidence: int = 3  # consecutive matching epochs that make a new phase
    include_library: bool = False  # count standard-library and site-packages frames as the program's
    depth: int = 4  # only the outermost program frames of a sample count (0: all): a phase is what the program
    #                 is doing at the top of its stack; inner helpers churn from one epoch to the next
    exact_repeats: bool = False  # first cut the sample trace at its exact repeats (exact.py), then find phases
    #                              between them by similarity

    def epoch_for(self, rate: float) -> float:
        """Seconds per epoch for a recording sampled at ``rate`` Hz."""
        return self.epoch_s if self.epoch_s is not None else self.epoch_samples / max(rate, 1e-9)


@dataclass
class Phase:
    """One phase of one run."""

    label: str
    start: float
    end: float
    epochs: int
    seconds: float  # sample time (CPU seconds in cpu mode)
    weights: dict[str, float] = field(default_factory=dict)
    frames: dict[str, Frame] = field(default_factory=dict)
    distinct: dict[str, float] = field(default_factory=dict)  # share here minus the largest share elsewhere

    def profile(self, min_share: float) -> dict[str, float]:
        """Function -> share of the phase's function time (see Epoch.shares)."""
        return Epoch(self.start, self.end, self.seconds, self.weights).shares(min_share)

    def dominant(self, count: int = 3) -> list[tuple[Frame, float]]:
        """The functions that set this phase apart, with the share of the phase's time each was on the
        stack: ranked by how much longer they are on the stack here than in any other phase of the run
        (functions every phase runs, such as ``main``, rank last), the more specific first among equals."""
        if self.seconds <= 0:
            return []
        ranked = sorted(self.weights, key=lambda label: (-round(self.distinct.get(label, 0.0), 2),
                                                        -round(self.weights[label] / self.seconds, 2)))
        apart = [label for label in ranked if self.distinct.get(label, 0.0) > 0.05] or ranked[:1]
        return [(self.frames[label], self.weights[label] / self.seconds) for label in apart[:count]
                if label in self.frames]

    def name(self) -> str:
        """The phase named by its distinctive functions with their source lines."""
        parts = [f"{frame.name} ({frame.file.rsplit('/', 1)[-1]}:{frame.line}) {share:.0%}" for frame, share in self.dominant()]
        return ", ".join(parts) if parts else "idle (no sample)"

    def to_dict(self, min_share: float) -> dict:
        """As JSON."""
        return {"label": self.label, "start": self.start, "end": self.end, "epochs": self.epochs,
                "seconds": self.seconds, "name": self.name(),
                "dominant": [{"function": f.name, "file": f.file, "line": f.line, "share": share}
                             for f, share in self.dominant()],
                "profile": self.profile(min_share)}


class _Segment:
    """Epochs of one phase in the making. Its profile comes from the epochs that matched it; odd epochs
    absorbed into it count for its time span and totals, not for what it is matched against."""

    def __init__(self, epochs: list[Epoch]) -> None:
        self.epochs: list[Epoch] = []
        self.matched: list[Epoch] = []
        self.weights: dict[str, float] = defaultdict(float)
        self.profile_weights: dict[str, float] = defaultdict(float)
        self.frames: dict[str, Frame] = {}
        self.seconds = 0.0
        self.profile_seconds = 0.0
        for epoch in epochs:
            self.add(epoch)

    def add(self, epoch: Epoch, matched: bool = True) -> None:
        self.epochs.append(epoch)
        self.seconds += epoch.seconds
        for label, weight in epoch.weights.items():
            self.weights[label] += weight
        self.frames.update(epoch.frames)
        if matched:
            self.matched.append(epoch)
            self.profile_seconds += epoch.seconds
            for label, weight in epoch.weights.items():
                self.profile_weights[label] += weight

    def shares(self, min_share: float) -> dict[str, float]:
        return Epoch(0, 0, self.profile_seconds, dict(self.profile_weights)).shares(min_share)

    def core_shares(self, min_share: float) -> dict[str, float]:
        """The profile without the first and last matched epochs, which straddle the phase's boundaries
        (when there are enough epochs to leave them out)."""
        if len(self.matched) < 4:
            return self.shares(min_share)
        return _Segment(self.matched[1:-1]).shares(min_share)


Known = list[tuple[str, dict[str, float]]]
"""Phase labels and profiles seen so far: pass one list to :func:`detect` for every run of a campaign, and
the same phase gets the same label in every run that has it."""


def detect(epochs: list[Epoch], options: PhaseOptions = PhaseOptions(),  # noqa: B008 - frozen
           known: Known | None = None) -> list[Phase]:
    """The phases of one run's epochs, in time order (labels shared through ``known``)."""
    if not epochs:
        return []
    return _labelled(_walk(epochs, options), options, [] if known is None else known)


def detect_regions(regions: list[tuple[bool, list[Epoch]]], options: PhaseOptions = PhaseOptions(),  # noqa: B008
                   known: Known | None = None) -> list[Phase]:
    """The phases of one run cut into regions first: ``(True, epochs)`` an exact repeat (see
    :mod:`exact`), a phase as it stands; ``(False, epochs)`` the stretch between two, where phases are
    found as :func:`detect` does. Then the confidence rule across regions: a stretch of fewer than
    ``confidence`` epochs is part of the phase before it (of the one after it at the run's start), and a
    phase whose profile matches the one before it continues it (a loop's exact stretches with a few odd
    samples between them are one phase)."""
    segments: list[_Segment] = []
    for exact, epochs in regions:
        if epochs:
            segments.extend([_Segment(epochs)] if exact else _walk(epochs, options))
    merged: list[_Segment] = []
    for segment in segments:
        if merged:
            previous = merged[-1]
            if len(segment.epochs) < options.confidence:  # too short to be a phase: the previous one's
                for epoch in segment.epochs:
                    previous.add(epoch, matched=False)
                continue
            if matches(segment.core_shares(options.min_share), previous.core_shares(options.min_share),
                       options.f_threshold, options.t_threshold):
                confirmed = {id(epoch) for epoch in segment.matched}
                for epoch in segment.epochs:
                    previous.add(epoch, matched=id(epoch) in confirmed)
                continue
            if len(merged) == 1 and len(previous.epochs) < options.confidence:  # a start too short to be a phase
                merged[0] = _joined(previous, segment)
                continue
        merged.append(segment)
    return _labelled(merged, options, [] if known is None else known)


def _joined(first: _Segment, second: _Segment) -> _Segment:
    """``second`` with ``first``'s epochs before it, those unmatched."""
    joined = _Segment([])
    for epoch in first.epochs:
        joined.add(epoch, matched=False)
    confirmed = {id(epoch) for epoch in second.matched}
    for epoch in second.epochs:
        joined.add(epoch, matched=id(epoch) in confirmed)
    return joined


def _walk(epochs: list[Epoch], options: PhaseOptions) -> list[_Segment]:
    """The fuzzy step: consecutive epochs that match form segments (see the module's docstring)."""
    segments: list[_Segment] = []
    current = _Segment([epochs[0]])
    candidate: list[Epoch] = []

    def same(a: dict[str, float], b: dict[str, float]) -> bool:
        return matches(a, b, options.f_threshold, options.t_threshold)

    for epoch in epochs[1:]:
        shares = epoch.shares(options.min_share)
        if same(shares, current.shares(options.min_share)):
            for odd in candidate:  # the current phase resumed: the odd epochs were part of it
                current.add(odd, matched=False)
            candidate = []
            current.add(epoch)
        else:
            if not (candidate and same(shares, _Segment(candidate).shares(options.min_share))):
                for odd in candidate:  # a candidate that did not last: odd epochs of the current phase
                    current.add(odd, matched=False)
                candidate = []
            candidate.append(epoch)
            if len(candidate) >= options.confidence:
                segments.append(current)
                current, candidate = _Segment(candidate), []
    if candidate and len(candidate) >= min(options.confidence, len(epochs)):
        segments.append(current)
        current = _Segment(candidate)
    else:
        for odd in candidate:
            current.add(odd, matched=False)
    segments.append(current)
    if len(segments) > 1 and len(segments[0].epochs) < options.confidence:
        first = segments.pop(0)  # a start too short to be a phase (interpreter start-up, imports): the next one's
        segments[0] = _joined(first, segments[0])
    return segments


def _labelled(segments: list[_Segment], options: PhaseOptions, known: Known) -> list[Phase]:
    phases: list[Phase] = []
    for segment in segments:
        profile = segment.core_shares(options.min_share)
        label = next((name for name, seen in known
                      if matches(profile, seen, options.f_threshold, options.t_threshold)), None)
        if label is None:
            label = f"P{len(known) + 1}"
            known.append((label, profile))
        if phases and phases[-1].label == label:  # two segments of one phase (an odd stretch between)
            last = phases[-1]
            last.end = segment.epochs[-1].end
            last.epochs += len(segment.epochs)
            last.seconds += segment.seconds
            for name, weight in segment.weights.items():
                last.weights[name] = last.weights.get(name, 0.0) + weight
            last.frames.update(segment.frames)
            continue
        phases.append(Phase(label, segment.epochs[0].start, segment.epochs[-1].end, len(segment.epochs),
                            segment.seconds, dict(segment.weights), dict(segment.frames)))
    presence: dict[str, dict[str, float]] = {phase.label: {} for phase in phases}
    for phase in phases:
        for name, weight in phase.weights.items():
            share = weight / phase.seconds if phase.seconds else 0.0
            presence[phase.label][name] = max(presence[phase.label].get(name, 0.0), share)
    for phase in phases:
        for name, weight in phase.weights.items():
            elsewhere = max((shares.get(name, 0.0) for label, shares in presence.items() if label != phase.label),
                            default=0.0)
            phase.distinct[name] = (weight / phase.seconds if phase.seconds else 0.0) - elsewhere
    return phases
