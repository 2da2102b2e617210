"""Sampled inputs: an input whose files are cut to their first part (issue 18, features cheap by
construction).

A sampled feature is a counter of the program (loop iterations, branch arms, calls) counted on a run of
the program over the *first part* of each input file (``fraction`` of its bytes, cut at the next line
end so that no line is split), then multiplied by the ratio of the files' whole size to the sampled
size. It stands in for the counter itself where the counter's slice costs as much as the run: the
program's own code says how much work each part of the input makes, and a sample of a few per cent of
the input says which kind of input this is (a document of tables or of prose, statements nested or
flat). Its value is an estimate, not the counter; models judge it by correlation, as content features.

A program may fail on a cut file (a C parser at the end of a half function): the counts up to that
point are still the work of the sample, so a sampled run's counts are kept whatever its exit status.

Standard library only: a predictor package can carry a copy of this file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

SAMPLED_PREFIX = "sampled:"
"""Column and feature-id prefix of sampled features: ``sampled:`` + the counter's feature id."""

MIN_BYTES = 256
"""A sample keeps at least this many bytes of a file (then up to the next line end): a few lines of a
small file say nothing about its kind."""


def sampled_id(counter: str) -> str:
    """The feature id of the sampled stand-in for ``counter``."""
    return SAMPLED_PREFIX + counter


def counter_of(feature: str) -> str:
    """The counter a sampled feature id stands in for."""
    if not feature.startswith(SAMPLED_PREFIX):
        raise ValueError(f"{feature!r} is not a sampled feature id (they start with {SAMPLED_PREFIX!r})")
    return feature[len(SAMPLED_PREFIX):]


def cut(data: bytes, fraction: float, min_bytes: int = MIN_BYTES) -> bytes:
    """The first ``fraction`` of ``data`` (at least ``min_bytes``), extended to the next line end."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"a sample's fraction must be in (0, 1], not {fraction}")
    wanted = max(int(len(data) * fraction), min_bytes)
    if wanted >= len(data):
        return data
    end = data.find(b"\n", max(wanted - 1, 0))
    return data if end < 0 else data[: end + 1]


@dataclass(frozen=True)
class SampledInput:
    """One input with its files replaced by their samples."""

    argv: list[str]
    """The arguments, each input file's name replaced by its sample's path."""
    samples: dict[str, str]
    """Input file (as named in the arguments) -> its sample's path."""
    full_bytes: int
    """The input files' total size."""
    sampled_bytes: int
    """The samples' total size."""

    @property
    def scale(self) -> float:
        """What a count on the sample is multiplied by: whole size over sampled size (1 without files)."""
        return self.full_bytes / self.sampled_bytes if self.sampled_bytes else 1.0


def sample_input(argv: list[str], files: list[str], folder: str, fraction: float, cwd: str | None = None,
                 min_bytes: int = MIN_BYTES) -> SampledInput:
    """Write the samples of ``files`` (names as in ``argv``, relative to ``cwd``) under ``folder``, each in
    a folder of its own under its own base name (a program may read the extension), and return the
    arguments that name them instead."""
    base = cwd or os.getcwd()
    samples: dict[str, str] = {}
    full = sampled = 0
    for number, name in enumerate(dict.fromkeys(files)):
        path = name if os.path.isabs(name) else os.path.join(base, name)
        with open(path, "rb") as handle:
            data = handle.read()
        part = cut(data, fraction, min_bytes)
        target_dir = os.path.join(folder, str(number))
        os.makedirs(target_dir, exist_ok=True)
        target = os.path.join(target_dir, os.path.basename(path) or "input")
        with open(target, "wb") as handle:
            handle.write(part)
        samples[name] = target
        full += len(data)
        sampled += len(part)
    return SampledInput(argv=[samples.get(arg, arg) for arg in argv], samples=samples, full_bytes=full,
                        sampled_bytes=sampled)


def scaled_counts(counts: dict[str, float], counters: list[str] | None, scale: float) -> dict[str, float]:
    """``{sampled id: count x scale}`` for ``counters`` (every counter in ``counts`` when None; a counter
    the sampled run never reached is 0)."""
    names = list(counts) if counters is None else counters
    return {sampled_id(name): float(counts.get(name, 0.0)) * scale for name in names}
