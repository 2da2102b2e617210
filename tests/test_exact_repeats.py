"""Exact repeats in a sample trace, and phases cut at them before the fuzzy step."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mantispy.phases.detect import PhaseOptions, detect, detect_regions
from mantispy.phases.epochs import Epoch, Trace, region_epochs
from mantispy.phases.exact import Stretch, exact_stretches
from mantispy.sampling.types import Frame


def _trace(text: str) -> list[int]:
    return [ord(c) for c in text]


def test_runs_of_one_stack_and_of_a_few_in_turn_are_found_longest_first():
    found = exact_stretches(_trace("AAAAAAXBCBCBCBCYDDDDZ"), min_length=4)
    assert found == [Stretch(0, 5, 1), Stretch(7, 14, 2), Stretch(16, 19, 1)]
    assert exact_stretches(_trace("ABCABCABCAB"), min_length=4) == [Stretch(0, 10, 3)]
    assert exact_stretches(_trace("AAAB"), min_length=4) == []  # too short
    assert exact_stretches(_trace("AAAAAAAA"), min_length=4) == [Stretch(0, 7, 1)]  # not also AA repeated


@given(st.lists(st.integers(0, 3), max_size=300), st.integers(2, 20))
@settings(max_examples=200, deadline=None)
def test_stretches_repeat_exactly_do_not_overlap_and_are_long_enough(trace, least):
    found = exact_stretches(trace, least)
    covered: set[int] = set()
    for stretch in found:
        assert stretch.length >= max(least, 2 * stretch.period)
        assert all(trace[i] == trace[i + stretch.period] for i in range(stretch.first, stretch.last - stretch.period + 1))
        span = set(range(stretch.first, stretch.last + 1))
        assert not span & covered
        covered |= span
    assert [s.first for s in found] == sorted(s.first for s in found)


def test_region_epochs_keep_every_samples_weight_inside_the_region():
    samples = Trace(times=[0.1, 0.2, 0.3, 0.9, 1.0], weights=[0.1, 0.1, 0.1, 0.6, 0.1], stacks=[0, 0, 1, 1, 0],
                    labels=[frozenset({"a"}), frozenset({"b"})], frames={"a": Frame("a", "/app/x.py", 1),
                                                                         "b": Frame("b", "/app/x.py", 5)})
    epochs = region_epochs(samples, 2, 4, 0.2, 1.0, 0.25)
    assert [round(e.start, 3) for e in epochs] == [0.2, 0.45, 0.7, 0.95] and epochs[-1].end == 1.0
    assert abs(sum(e.seconds for e in epochs) - 0.8) < 1e-9  # 0.1 + 0.6 (its 0.6 s fits in the region's 0.6 s) + 0.1
    assert abs(sum(e.weights.get("b", 0.0) for e in epochs) - 0.7) < 1e-9


def _epoch(n: int, *functions: str) -> Epoch:
    frames = {name: Frame(name, "/app/x.py", i + 1) for i, name in enumerate(functions)}
    return Epoch(n * 0.1, (n + 1) * 0.1, 0.1, dict.fromkeys(functions, 0.1), frames)


def test_an_exact_stretch_is_a_phase_and_odd_samples_between_two_of_one_loop_join_them():
    load = [_epoch(n, "main", "load") for n in range(5)]
    odd = [_epoch(5, "main", "gc_hook")]
    load_again = [_epoch(n, "main", "load") for n in range(6, 10)]
    crunch = [_epoch(n, "main", "crunch") for n in range(10, 16)]
    phases = detect_regions([(True, load), (False, odd), (True, load_again), (False, crunch)], PhaseOptions(confidence=3))
    assert [(p.label, p.epochs) for p in phases] == [("P1", 10), ("P2", 6)]
    assert "load" in phases[0].name() and "crunch" in phases[1].name()


def test_a_short_start_before_an_exact_stretch_belongs_to_it_and_labels_are_shared():
    start = [_epoch(0, "imports")]
    work = [_epoch(n, "main", "work") for n in range(1, 6)]
    known: list = []
    phases = detect_regions([(False, start), (True, work)], PhaseOptions(confidence=3), known)
    assert [(p.label, p.start, p.epochs) for p in phases] == [("P1", 0.0, 6)]
    again = detect([_epoch(n, "main", "work") for n in range(6)], PhaseOptions(confidence=3), known)
    assert [p.label for p in again] == ["P1"]
