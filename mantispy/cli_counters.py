"""``mantispy counters``: which performance counters this machine offers and why the others are missing;
with a program, its counters per chosen function (inclusive per call)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import click

from mantispy.errors import UserError
from mantispy.runtime import call_sampling, function_counters, perf_counters


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--json", "as_json", is_flag=True, help="One JSON object: every event with its status, and the fallbacks "
              "(with a program: the function profile).")
@click.option("--function", "patterns", multiple=True, metavar="PATTERN",
              help="With a program: count per call of the functions whose FILE:QUALNAME matches (fnmatch; FILE "
                   "relative to the script's folder), e.g. 'pkg/lexer.py:*' or '*:Parser.parse'. Repeatable.")
@click.option("-o", "--out", "out", type=click.Path(path_type=Path), default=None,
              help="With a program: also write the function profile (JSON) here; an existing file is not replaced.")
@click.option("--budget", type=click.FloatRange(min=0.0, max=1.0), default=None, metavar="SHARE",
              help="With a program: the share of the CPU time measuring one function may cost (default 0.005); "
                   "every call is counted, the first 100 measured, then as many as fit; 0 measures every call.")
@click.option("--hook", type=click.Choice(function_counters.HOOKS), default=None,
              help="With a program: how calls are seen: probes added to the chosen functions as their modules are "
                   "imported (the default), or sys.monitoring events (3.12+; probes where it is missing).")
@click.argument("program", nargs=-1, type=click.UNPROCESSED)
def counters(as_json: bool, patterns: tuple[str, ...], out: Path | None, budget: float | None, hook: str | None,
             program: tuple[str, ...]) -> None:
    """Which performance counters this machine offers (perf_event_open), and why the others are missing.

    Hardware events (instructions, cycles, cache and branch misses) need a PMU the kernel exposes;
    software events (task-clock, page faults, context switches, migrations) need only perf_event_open.
    Every profiled run stores the events that open (hw.*, sw.*) and, always, the fallback that wait4's
    resource usage gives (ru.*: page faults, context switches, block IO); mantispy fit and build can
    target any of them (--metric).

    With a program (mantispy counters --function PATTERN -- SCRIPT ARGS), runs it once and shows, per
    chosen function, its calls, how many were measured (all of a function's first 100, then as many as
    keep measuring it under --budget of the CPU time), and the mean per call (over its last 10 measured
    calls) of every counter that opens, of the thread's CPU time and of its page faults and context
    switches, callees included."""
    if program:
        _profile_functions(list(program), list(patterns), out, as_json, budget, hook)
        return
    if patterns or out is not None or budget is not None or hook is not None:
        raise UserError("--function, --budget, --hook and -o need a program: mantispy counters --function PATTERN -- "
                        "SCRIPT ARGS")
    statuses = perf_counters.probe()
    if as_json:
        click.echo(json.dumps({"paranoid": perf_counters.paranoid_level(),
                               "events": [asdict(s) for s in statuses],
                               "fallback": list(perf_counters.RUSAGE_METRICS),
                               "io": list(perf_counters.PROC_IO_METRICS)}, indent=2))
        return
    click.echo(f"perf_event_paranoid: {perf_counters.paranoid_level()}")
    width = max(len(s.name) for s in statuses)
    for status in statuses:
        state = "available" if status.available else f"missing: {status.reason}"
        click.echo(f"  {status.name:<{width}}  {status.kind:<8}  {state}")
    opened = sum(s.available for s in statuses)
    click.echo(f"{opened} of {len(statuses)} events count here; every run also stores {', '.join(perf_counters.RUSAGE_METRICS)} "
               f"(wait4's resource usage) and {', '.join(perf_counters.PROC_IO_METRICS)} (/proc/PID/io)")


def _profile_functions(program: list[str], patterns: list[str], out: Path | None, as_json: bool,
                       budget: float | None, hook: str | None = None) -> None:
    from mantispy.counters.function_profile import FunctionProfileError, load, table_rows

    if not patterns:
        raise UserError("give the functions to count: --function 'FILE:QUALNAME' (fnmatch patterns, e.g. "
                        "'app.py:*' or '*:Parser.parse')")
    if program[0] != "-m" and not Path(program[0]).is_file():
        raise UserError(f"{program[0]}: no such script; give SCRIPT ARGS or -m MODULE ARGS after --")
    if out is not None and out.exists():
        raise UserError(f"{out}: exists; mantispy will not write over it (give another -o)")
    hook = hook or os.environ.get(function_counters.ENV_HOOK) or "probes"
    if hook not in function_counters.HOOKS:
        raise UserError(f"{function_counters.ENV_HOOK}={hook}: not a hook; give one of {', '.join(function_counters.HOOKS)} "
                        "(or --hook)")
    if hook == "monitoring" and sys.version_info < (3, 12):
        click.echo(f"mantispy: sys.monitoring is Python 3.12+ (this is {sys.version.split()[0]}): calls are seen by "
                   "probes instead", err=True)
    refused = perf_counters.refused_note(perf_counters.probe(), "each call reads its thread's own accounting instead "
                                         "(getrusage: thread.minor_faults, thread.voluntary_switches, ...)")
    if refused is not None:
        click.echo(f"mantispy: {refused}", err=True)
    with tempfile.TemporaryDirectory(prefix="mantis-function-counters-") as tmp:
        target = Path(tmp) / "profile.json"
        env = {**os.environ, function_counters.ENV_PATTERNS: ",".join(patterns), function_counters.ENV_OUT: str(target),
               function_counters.ENV_HOOK: hook}
        if budget is not None:
            env[call_sampling.ENV_BUDGET] = repr(budget)
        returncode = subprocess.run([sys.executable, "-m", "mantispy.runtime.function_counters", *program],
                                    env=env).returncode
        if not target.exists():
            raise UserError(f"{program[0]}: the program ended without writing its function profile (exit status "
                            f"{returncode}; a process that ends through os._exit or a signal writes none)")
        try:
            profile = load(target)
        except FunctionProfileError as exc:
            raise UserError(str(exc)) from None
        if out is not None:
            out.write_bytes(target.read_bytes())
    if as_json:
        click.echo(json.dumps({"events": profile.events, "refused": profile.refused, "api": profile.api,
                               "functions": {n: asdict(f) for n, f in profile.functions.items()}}, indent=2))
    else:
        header, rows = table_rows(profile)
        widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i]) for i in range(len(header))]
        click.echo("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        for row in rows:
            click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths)))
        if not rows:
            click.echo(f"no function matched {', '.join(patterns)} (FILE is relative to the script's folder)")
        click.echo(f"({profile.api}, Python {profile.python}; per call: the mean over each function's last measured "
                   "calls, callees included)")
    if returncode != 0:
        raise SystemExit(1)


def register(group: click.Group) -> None:
    """Add ``counters`` to the ``mantispy`` command group."""
    group.add_command(counters)
