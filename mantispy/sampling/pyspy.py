"""py-spy as the sampler (``mantispy record --sampler py-spy``): attach to the running program from
outside (ptrace), then turn its Chrome trace into the recording's samples.

py-spy attaches to the program mantispy started (``py-spy record --pid``), so the program's exit status
stays its own; what it runs before py-spy has attached (tens of milliseconds) is not sampled. py-spy
writes its trace when the program ends, so a recording whose recorder is killed keeps its resource
points but no py-spy sample. Its trace lists, per thread, when each frame begins and ends; each
interval between two consecutive events becomes one sample of the stack open during it, weighted by
the interval's length.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from .store import RecordingError

PTRACE_FIX = ("py-spy cannot read the program's memory (ptrace refused): run as root, give py-spy CAP_SYS_PTRACE, "
              "or set /proc/sys/kernel/yama/ptrace_scope to 0 (or use the built-in sampler: --sampler builtin)")


def find() -> str:
    """The py-spy executable (on PATH or beside this interpreter); RecordingError when missing."""
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).with_name("py-spy")
    if beside.exists():
        return str(beside)
    raise RecordingError("--sampler py-spy: py-spy is not installed; pip install py-spy (or use --sampler builtin)")


def command(py_spy: str, pid: int, trace: Path, rate: float, mode: str) -> list[str]:
    """py-spy's command line for one recording."""
    return [py_spy, "record", "--pid", str(pid), "--rate", str(int(round(rate))), "--subprocesses", "--format",
            "chrometrace", "--output", str(trace), "--function", *(["--idle"] if mode == "wall" else [])]


def refusal(stderr: str) -> str | None:
    """The one-line reason when py-spy's output says it could not attach."""
    lowered = stderr.lower()
    if "permission denied" in lowered or "operation not permitted" in lowered or "ptrace" in lowered:
        return PTRACE_FIX
    return None


def read_trace(path: Path, started: float) -> tuple[dict[int, list[str]], list[tuple[float, int, int, int, float]]]:
    """(stacks, samples) from a py-spy Chrome trace; ``started``: epoch seconds of the trace's zero."""
    try:
        events = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, []
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    by_thread: dict[tuple[int, int], list[dict]] = {}
    for event in events:
        if isinstance(event, dict) and event.get("ph") in ("B", "E") and "ts" in event:
            by_thread.setdefault((int(event.get("pid", 0)), int(event.get("tid", 0))), []).append(event)
    stacks: dict[tuple[str, ...], int] = {}
    samples: list[tuple[float, int, int, int, float]] = []
    for (pid, tid), rows in by_thread.items():
        open_frames: list[str] = []
        last_ts: float | None = None
        for event in rows:  # py-spy writes each thread's events in time order
            ts = float(event["ts"]) / 1e6
            if last_ts is not None and ts > last_ts and open_frames:
                key = tuple(open_frames)
                sid = stacks.setdefault(key, len(stacks))
                samples.append((started + last_ts, pid, tid, sid, ts - last_ts))
            last_ts = ts
            if event["ph"] == "B":
                args = event.get("args") or {}
                if not args.get("filename") and str(event.get("name", "")).startswith("process "):
                    open_frames.append("")  # py-spy's per-process root: kept as a marker, dropped below
                else:
                    open_frames.append(f"{event.get('name', '?')}\t{args.get('filename', '')}\t{int(args.get('line', 0) or 0)}")
            elif open_frames:
                open_frames.pop()
    out = {sid: [frame for frame in key if frame] for key, sid in stacks.items()}
    return out, samples
