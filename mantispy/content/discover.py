"""Which regular expressions a program compiles: a few untimed runs of the original program under
:mod:`mantispy.runtime.regex_probe`, their patterns merged into :class:`~mantispy.content.types.ContentFeature`
candidates (one per pattern and flags, at the first place the program compiled it)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from mantispy.runtime import regex_probe
from mantispy.runtime.content import feature_id

from .types import ContentFeature

LAUNCHER = ["-m", "mantispy.runtime.regex_probe"]


def probing_argv(argv: list[str]) -> list[str]:
    """``[python, SCRIPT|-m MODULE, ARGS...]`` run under the probe."""
    return [argv[0], *LAUNCHER, *argv[1:]]


def read_probe_files(folder: Path) -> list[dict]:
    """The pattern records of every probed process that wrote into ``folder`` (unreadable files skipped)."""
    found: list[dict] = []
    for path in sorted(Path(folder).glob("regex-*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("format") == regex_probe.FORMAT and isinstance(data.get("patterns"), list):
            found.extend(p for p in data["patterns"] if isinstance(p, dict))
    return found


def candidates_from(records: list[dict]) -> list[ContentFeature]:
    """One candidate per (pattern, bytes, flags), at its first place in file and line order."""
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
    return sorted(found.values(), key=lambda c: c.id)


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
