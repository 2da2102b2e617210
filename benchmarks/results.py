"""Shared by the benchmark scripts: the machine fingerprint and writing one section of RESULTS.md.

Each script owns the text between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->``; other sections
are left as they are, so benchmarks can be rerun one at a time.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def machine_fingerprint() -> str:
    """One line: CPU, cores, memory, Python, mantispy revision, date."""
    from mantispy.profiler import environment_fingerprint

    cpu = environment_fingerprint()["cpu_model"] or "unknown CPU"
    try:
        mem_kb = int(next(row for row in Path("/proc/meminfo").read_text().splitlines() if row.startswith("MemTotal")).split()[1])
        memory = f"{mem_kb / 2**20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        memory = "? GiB"
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=RESULTS.parent, timeout=10).stdout.strip() or "?"
    except OSError:
        rev = "?"
    return (f"{cpu}, {os.cpu_count()} cores, {memory}; Python {platform.python_version()}; "
            f"mantispy {rev}; {datetime.date.today().isoformat()}")


def write_section(name: str, title: str, fingerprint: str, lines: list[str]) -> None:
    """Replace (or append) this benchmark's section of RESULTS.md."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    body = "\n".join([start, f"## {title}", "", f"Machine: {fingerprint}", "", *lines, end])
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n"
    if start in text and end in text:
        text = text[: text.index(start)] + body + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + body + "\n"
    RESULTS.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


def publish(name: str, title: str, lines: list[str], write: bool) -> None:
    """Print a benchmark's section, and write it to RESULTS.md (:func:`write_section`) unless ``write`` is false."""
    print("\n".join(lines))
    if write:
        write_section(name, title, machine_fingerprint(), lines)
