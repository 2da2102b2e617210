"""Input coverage: which lines and branches of the target a campaign's inputs exercise (coverage.py).

Each input runs once more, uninstrumented, under ``coverage run --branch`` restricted to the program's
source; the data are combined and the per-file JSON report is stored with the campaign. Parts of the
program no input reached are parts a model knows nothing about.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from mantispy.campaign import CampaignSpec
from mantispy.profiler import ORIGINAL, make_task, run_tasks


def measure_coverage(spec: CampaignSpec, jobs: int = 1) -> dict[str, Any]:
    """Run every input under coverage.py and return the combined report (coverage's JSON format)."""
    import coverage

    root = spec.source_root
    with tempfile.TemporaryDirectory(prefix="mantis-coverage-") as tmp:
        data_file = Path(tmp) / ".coverage"
        tasks = []
        for record in spec.inputs:
            task = make_task(spec, record, 0, ORIGINAL, root)
            wrapped = [sys.executable, "-m", "coverage", "run", "--branch", "--parallel-mode",
                       f"--data-file={data_file}", f"--source={root}", *task.argv[1:]]
            tasks.append(replace(task, argv=wrapped, timeout=spec.timeout * 5))
        failures = [r.input_id for r in run_tasks(tasks, jobs) if r.status != "ok"]
        cov = coverage.Coverage(data_file=str(data_file), branch=True)
        cov.combine([tmp], keep=False)
        cov.save()
        report_file = Path(tmp) / "coverage.json"
        cov.json_report(outfile=str(report_file), ignore_errors=True)
        report = json.loads(report_file.read_text())
    files = {}
    for name, data in report.get("files", {}).items():
        rel = Path(name).resolve()
        rel_name = rel.relative_to(root).as_posix() if rel.is_relative_to(root) else name
        files[rel_name] = {
            "summary": data["summary"],
            "missing_lines": data.get("missing_lines", []),
            "missing_branches": data.get("missing_branches", []),
        }
    return {"totals": report.get("totals", {}), "files": files, "inputs": len(tasks), "failed_inputs": failures}


def line_ranges(lines: list[int]) -> str:
    """[1, 2, 3, 7, 9, 10] -> '1-3, 7, 9-10'."""
    parts: list[str] = []
    start = prev = None
    for n in sorted(lines):
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = n
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ", ".join(parts)
