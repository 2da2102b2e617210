"""One self-contained HTML page per recording: every process's resource series, and the flame graph of
the window the user brushes on them (computed in the page from the embedded samples; no server, no
network). The page's script and style are ``assets/view.js`` and ``assets/view.css``, inlined."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from .store import RecordingStore
from .types import WHOLE, Recording

ASSETS = Path(__file__).resolve().parent / "assets"
DEFAULT_METRIC = "proc.cpu.percent"


def render(store: RecordingStore, recording: Recording) -> str:
    """The page for the whole recording."""
    data = page_data(store, recording)
    title = f"mantispy recording {recording.id}: {' '.join(recording.command)}"
    script = (ASSETS / "view.js").read_text(encoding="utf-8")
    style = (ASSETS / "view.css").read_text(encoding="utf-8")
    notes = "".join(f"<li>{escape(note)}</li>" for note in recording.notes)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{style}</style></head><body>\n"
        f"<h1>{escape(title)}</h1>\n"
        f"<div class='meta'>{escape(_meta(recording, data))}</div>\n"
        + (f"<ul class='notes'>{notes}</ul>\n" if notes else "")
        + "<div class='controls'>series <select id='metric'></select> "
        "<button id='reset'>whole run</button> — drag across the chart to choose a window</div>\n"
        "<div id='phases'></div><div id='chart'></div><div class='legend' id='legend'></div>\n"
        "<h2>Flame graph <span id='window'></span></h2><div id='flame-holder'></div>\n"
        f"<script type='application/json' id='recording-data'>{_embed(data)}</script>\n"
        f"<script>{script}</script></body></html>\n"
    )


def page_data(store: RecordingStore, recording: Recording) -> dict:
    """The JSON the page reads: series by metric and pid, interned frames and stacks, samples."""
    frames = store.frames(recording.id)
    labels: list[str] = []
    label_ids: dict[str, int] = {}
    stacks: dict[int, list[int]] = {}
    stack_index: dict[int, int] = {}
    samples = []
    for sample in store.samples(recording, WHOLE):
        if sample.stack not in stack_index:
            ids = []
            for frame in frames.get(sample.stack, ()):
                label = frame.label()
                if label not in label_ids:
                    label_ids[label] = len(labels)
                    labels.append(label)
                ids.append(label_ids[label])
            stack_index[sample.stack] = len(stacks)
            stacks[len(stacks)] = ids
        samples.append([round(sample.t - recording.started, 4), sample.pid, sample.tid, stack_index[sample.stack],
                        sample.weight])
    series: dict[str, dict[str, list[list[float]]]] = {}
    commands: dict[str, str] = {}
    for point in store.points(recording):
        pid = point.tags.get("pid", "0")
        commands.setdefault(pid, point.tags.get("command", ""))
        series.setdefault(point.metric, {}).setdefault(pid, []).append([round(point.t - recording.started, 3), point.value])
    ends = [s[0] for s in samples] + [p[0] for by_pid in series.values() for pts in by_pid.values() for p in pts]
    duration = recording.duration if recording.duration is not None else max(ends, default=0.0)
    stored = store.phases(recording.id)
    phases = [{"label": ph["label"], "start": ph["start"], "end": ph["end"], "name": ph["name"]}
              for ph in (stored[1] if stored else [])]
    return {"duration": max(duration or 0.0, max(ends, default=0.0)), "mode": recording.mode, "phases": phases,
            "defaultMetric": DEFAULT_METRIC if DEFAULT_METRIC in series else (sorted(series) or [""])[0],
            "series": series, "commands": commands, "frames": labels, "stacks": [stacks[i] for i in range(len(stacks))],
            "samples": samples}


def _meta(recording: Recording, data: dict) -> str:
    return (f"{recording.status}, exit status {recording.returncode}, {data['duration']:.2f} s, "
            f"{len(data['samples'])} samples at {recording.rate:g} Hz ({recording.mode} time), resources every "
            f"{recording.interval:g} s, {len(data['commands'])} process(es), host {recording.host}")


def _embed(data: dict) -> str:
    """JSON safe inside a script element."""
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
