"""Which regular expressions a program compiles: a few untimed runs of the original program under
:mod:`mantispy.runtime.regex_probe`, their patterns merged into :class:`~mantispy.content.types.ContentFeature`
candidates: one per pattern and flags, at the first place the program compiled it, and one *scanner* per
place that compiled at least :data:`MIN_SCANNER_PARTS` patterns with the same flags (a lexer's rules, as
sqlparse compiles its 50 in one list): their alternation in the order the program compiled them, which
counts the tokens the lexer makes where each pattern alone counts one kind of them."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from mantispy.runtime import regex_probe
from mantispy.runtime.content import feature_id

from .types import INPUT_FILES, ContentFeature

LAUNCHER = ["-m", "mantispy.runtime.regex_probe"]


def probing_argv(argv: list[str]) -> list[str]:
    """``[python, SCRIPT|-m MODULE, ARGS...]`` run under the probe."""
    return [argv[0], *LAUNCHER, *argv[1:]]


MIN_SCANNER_PARTS = 3
"""The fewest patterns one place must compile (with the same flags) to be offered as a scanner."""

PROCESS = "process"
"""Key :func:`read_probe_files` adds to each record: which probed process (file) noted it."""

_GROUP_REFERENCE = re.compile(r"\\[1-9]|\(\?P=|\(\?\(")
"""A back-reference or conditional by group: its number would point elsewhere inside an alternation."""
_GLOBAL_FLAGS = re.compile(r"^\(\?([aiLmsux]+)\)")


def read_probe_files(folder: Path) -> list[dict]:
    """The pattern records of every probed process that wrote into ``folder`` (unreadable files skipped),
    each with the number of its process under :data:`PROCESS`."""
    found: list[dict] = []
    for number, path in enumerate(sorted(Path(folder).glob("regex-*.json"))):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("format") == regex_probe.FORMAT and isinstance(data.get("patterns"), list):
            found.extend({**p, PROCESS: number} for p in data["patterns"] if isinstance(p, dict))
    return found


def alternation(patterns: list[str], is_bytes: bool, flags: int) -> str | None:
    """The patterns as one alternation tried in their order, or None where that would not match as they
    do one by one (group references, global flags that cannot be scoped, a pattern that does not compile)."""
    parts = []
    verbose = bool(flags & re.VERBOSE)
    for pattern in patterns:
        if _GROUP_REFERENCE.search(pattern):
            return None
        scoped = _GLOBAL_FLAGS.match(pattern)
        if scoped:  # "(?i)rest" is allowed only at the start of the whole expression: "(?i:rest)" is the same
            pattern = f"(?{scoped.group(1)}:{pattern[scoped.end():]}{chr(10) if verbose else ''})"
        parts.append(f"(?:{pattern}{chr(10) if verbose else ''})")  # a verbose pattern's comment ends at a newline
    joined = "|".join(parts)
    try:
        re.compile(joined.encode("latin-1") if is_bytes else joined, flags)
    except (re.error, UnicodeEncodeError, ValueError, OverflowError, RecursionError):
        return None
    return joined


def scanners_from(records: list[dict]) -> list[ContentFeature]:
    """One scanner per (file, line, bytes, flags) where one process compiled at least
    :data:`MIN_SCANNER_PARTS` patterns, in the order that process compiled them (the process that
    compiled the most there)."""
    sites: dict[tuple, dict[int, list[dict]]] = {}
    for rec in records:
        try:
            key = (str(rec["file"]), int(rec["line"]), bool(rec["bytes"]), int(rec["flags"]))
            int(rec.get("order", 0))
        except (KeyError, TypeError, ValueError):
            continue
        sites.setdefault(key, {}).setdefault(int(rec.get(PROCESS, 0)), []).append(rec)
    found: list[ContentFeature] = []
    for (file, line, is_bytes, flags), by_process in sorted(sites.items()):
        best = max(by_process.values(), key=len)  # max keeps the first (lowest process number) of equal lengths
        rules = [str(r["pattern"]) for r in sorted(best, key=lambda r: int(r.get("order", 0)))]
        if len(rules) < MIN_SCANNER_PARTS:
            continue
        pattern = alternation(rules, is_bytes, flags)
        if pattern is None:
            continue
        found.append(ContentFeature(id=feature_id(file, line, pattern, is_bytes, flags, kind="scanner"), pattern=pattern,
                                    bytes=is_bytes, flags=flags, file=file, line=line,
                                    qualname=str(best[0].get("qualname", "")), kind="scanner", parts=len(rules)))
    return found


COUNTED_BYTES = b"\n" + bytes(c for c in range(33, 127) if not chr(c).isalnum())
"""The bytes offered as ``byte`` candidates: the newline and the ASCII punctuation (separators, brackets,
quotes, operators: what a parser's work follows where letters and digits only make its tokens longer)."""


def byte_candidates() -> list[ContentFeature]:
    """One ``byte`` candidate per byte of :data:`COUNTED_BYTES`: its occurrences in the input files."""
    found = []
    for value in COUNTED_BYTES:
        pattern = re.escape(bytes([value])).decode("latin-1")
        found.append(ContentFeature(id=feature_id("input", 0, pattern, True, 0, kind="byte"), pattern=pattern,
                                    bytes=True, flags=0, file=INPUT_FILES, line=0, qualname="", kind="byte"))
    return found


def candidates_from(records: list[dict]) -> list[ContentFeature]:
    """One candidate per (pattern, bytes, flags), at its first place in file and line order, and the
    scanners of :func:`scanners_from`."""
    found: dict[str, ContentFeature] = {}
    for rec in sorted(records, key=lambda r: (str(r.get("file")), int(r.get("line", 0)), str(r.get("pattern")))):
        try:
            pattern, is_bytes, flags = str(rec["pattern"]), bool(rec["bytes"]), int(rec["flags"])
            file, line, qualname = str(rec["file"]), int(rec["line"]), str(rec.get("qualname", ""))
        except (KeyError, TypeError, ValueError):
            continue
        key = f"{int(is_bytes)}:{flags}:{pattern}"
        if key not in found:
            found[key] = ContentFeature(id=feature_id(file, line, pattern, is_bytes, flags), pattern=pattern,
                                        bytes=is_bytes, flags=flags, file=file, line=line, qualname=qualname)
    return sorted([*found.values(), *scanners_from(records)], key=lambda c: c.id)


def discover(spec, input_ids: list[str], jobs: int = 1,
             log: Callable[[str], None] = lambda _m: None) -> list[ContentFeature]:
    """Run the original program on the inputs ``input_ids`` of campaign ``spec`` under the probe (untimed,
    unstored) and return the candidates its files compiled."""
    from mantispy.monitoring.view import package_locations
    from mantispy.profiler import ORIGINAL, make_task, run_tasks

    wanted = set(input_ids)
    records = [r for r in spec.inputs if r.id in wanted]
    root = spec.source_root
    packages = os.pathsep.join(str(p) for p in package_locations(spec).values())  # a campaign's ``include``
    with tempfile.TemporaryDirectory(prefix="mantis-regex-") as tmp:
        tasks = []
        for record in records:
            task = make_task(spec, record, 0, ORIGINAL, root)
            env = {**task.env, regex_probe.ENV_OUT: tmp, regex_probe.ENV_ROOT: str(Path(root).resolve()),
                   regex_probe.ENV_PACKAGES: packages}
            tasks.append(replace(task, argv=probing_argv(task.argv), env=env, timeout=spec.timeout * 5))
        for result in run_tasks(tasks, jobs):
            if result.status != "ok":
                log(f"input {result.input_id} {result.status} while looking for its regular expressions: "
                    f"{result.stderr_tail.strip()[-200:]}")
        return candidates_from(read_probe_files(Path(tmp)))
