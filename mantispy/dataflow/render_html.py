"""One self-contained HTML page per dataflow profile: the operations as a DAG (time, tasks, class), a
Gantt chart of every worker thread's tasks, and each operation's source. No server, no network: the
page's script and style (``assets/dataflow.js``, ``assets/dataflow.css``) and its data are inlined."""

from __future__ import annotations

import ast
import json
from functools import lru_cache
from html import escape
from pathlib import Path
from typing import Any

from .classify import classify_operation
from .operations import critical_path, operations, transfer_totals
from .types import DataflowProfile, FunctionRef

ASSETS = Path(__file__).resolve().parent / "assets"
MAX_SOURCE_LINES = 40


def render(profile: DataflowProfile) -> str:
    """The page."""
    data = page_data(profile)
    title = f"mantispy dataflow: {' '.join(profile.command)}"
    script = (ASSETS / "dataflow.js").read_text(encoding="utf-8")
    style = (ASSETS / "dataflow.css").read_text(encoding="utf-8")
    c = profile.cluster
    meta = (f"{'complete' if profile.complete else 'INCOMPLETE'} · exit status {profile.returncode} · "
            f"{profile.wall_s:.2f} s · {c.workers} worker(s) x {c.threads_per_worker} thread(s) · {c.cores} cores"
            + (_transfers(profile) if profile.transfers else ""))
    notes = "".join(f"<li>{escape(n)}</li>" for n in profile.notes)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{style}</style></head><body>\n"
        f"<h1>{escape(title)}</h1><div class='meta'>{escape(meta)}</div>\n"
        + (f"<ul class='notes'>{notes}</ul>\n" if notes else "")
        + "<h2>Operations <span class='hint'>(click one: its tasks light up below, its source appears)</span></h2>"
        "<div id='dag'></div><div id='source'></div>\n<h2>Worker threads</h2><div id='gantt'></div>\n"
        f"<script type='application/json' id='dataflow-data'>{_embed(data)}</script>\n"
        f"<script>{script}</script></body></html>\n"
    )


def _transfers(profile: DataflowProfile) -> str:
    totals = transfer_totals(profile)
    rate = "" if totals.median_rate is None else f" (median {totals.median_rate / 1e6:.0f} MB/s)"
    return f" · {totals.fetches} fetches between workers, {totals.nbytes / 1e6:.1f} MB in {totals.seconds:.2f} s{rate}"


def page_data(profile: DataflowProfile) -> dict[str, Any]:
    """What the page draws: operations with their layer in the DAG, tasks by worker thread, sources."""
    ops = operations(profile)
    index = {op.name: i for i, op in enumerate(ops)}
    layer: dict[str, int] = {}
    for op in sorted(ops, key=lambda o: o.first_start):
        layer[op.name] = 1 + max((layer.get(u, 0) for u in op.upstream), default=-1)
    on_path = {t.key for t in critical_path(profile)}
    threads: dict[tuple[str, int], int] = {}
    tasks = []
    for task in sorted((t for t in profile.tasks if t.ran), key=lambda t: t.start):
        row = threads.setdefault((task.worker, task.thread), len(threads))
        tasks.append([index[task.operation], row, round(task.start - profile.started, 5),
                      round(task.stop - profile.started, 5), int(task.key in on_path)])
    return {
        "operations": [{"name": op.name, "tasks": op.tasks, "compute_s": op.compute_s, "span_s": op.span_s,
                        "start": op.first_start, "parallelism": op.parallelism, "bytes_in": op.bytes_in,
                        "bytes_out": op.bytes_out, "bytes_moved": op.bytes_moved, "cpu_share": op.cpu_share, "class": op.measured_class,
                        "code_class": (classify_operation(op.functions) or (None,))[0],
                        "critical_s": op.critical_s, "layer": layer[op.name],
                        "upstream": [index[u] for u in op.upstream if u in index],
                        "functions": [_function(f) for f in op.own_functions[:4]]} for op in ops],
        "threads": [f"{worker} thread {thread}" for (worker, thread) in threads],
        "tasks": tasks, "wall_s": profile.wall_s,
    }


def _function(ref: FunctionRef) -> dict[str, Any]:
    return {"label": ref.label, "file": ref.file, "line": ref.line, "source": source_of(ref.file, ref.line)}


@lru_cache(maxsize=256)
def _parsed(path: str) -> tuple[list[str], dict[int, int]]:
    text = Path(path).read_text(encoding="utf-8")
    ends: dict[int, int] = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            ends.setdefault(first, node.end_lineno or node.lineno)
            ends.setdefault(node.lineno, node.end_lineno or node.lineno)
    return text.splitlines(), ends


def source_of(path: str, line: int) -> str:
    """The source of the function starting at ``line`` of ``path`` (at most 40 lines), or ''."""
    if not path or line <= 0 or not path.endswith(".py"):
        return ""
    try:
        lines, ends = _parsed(path)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return ""
    end = min(ends.get(line, line), line + MAX_SOURCE_LINES - 1)
    return "\n".join(lines[line - 1:end])


def _embed(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
