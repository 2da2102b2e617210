"""A recording's time series in four formats: csv, json, OpenTSDB's ``put`` lines, Prometheus text."""

from __future__ import annotations

import csv
import io
import json
import re

from .types import Point, Recording

FORMATS = ("csv", "json", "opentsdb", "prometheus")


def render(points: list[Point], recording: Recording, fmt: str) -> str:
    """The points in ``fmt`` (times: epoch seconds, and seconds from the recording's start in csv/json)."""
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["metric", "timestamp", "t_s", "value", "pid", "command", "host", "run"])
        for p in points:
            writer.writerow([p.metric, f"{p.t:.3f}", f"{p.t - recording.started:.3f}", _number(p.value),
                             p.tags.get("pid", ""), p.tags.get("command", ""), p.tags.get("host", ""), p.tags.get("run", "")])
        return out.getvalue()
    if fmt == "json":
        return json.dumps({"recording": recording.to_dict(),
                           "points": [{"metric": p.metric, "timestamp": p.t, "t_s": p.t - recording.started,
                                       "value": p.value, "tags": p.tags} for p in points]}, indent=1) + "\n"
    if fmt == "opentsdb":
        return "".join(f"put {p.metric} {int(p.t * 1000)} {_number(p.value)} "
                       + " ".join(f"{k}={_tsdb_tag(v)}" for k, v in sorted(p.tags.items())) + "\n" for p in points)
    if fmt == "prometheus":
        lines = []
        seen: set[str] = set()
        for p in points:
            name = "mantispy_" + re.sub(r"[^a-zA-Z0-9_]", "_", p.metric)
            if name not in seen:
                seen.add(name)
                lines.append(f"# TYPE {name} gauge")
            labels = ",".join(f'{k}="{_prom_label(v)}"' for k, v in sorted(p.tags.items()))
            lines.append(f"{name}{{{labels}}} {_number(p.value)} {int(p.t * 1000)}")
        return "\n".join(lines) + ("\n" if lines else "")
    raise ValueError(f"unknown series format {fmt!r}")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _tsdb_tag(value: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_./-]", "_", value)[:200] or "_"


def _prom_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
