"""``mantispy counters``: which performance counters this machine offers, and why the others are missing."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from mantispy.runtime import perf_counters


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object: every event with its status, and the fallbacks.")
def counters(as_json: bool) -> None:
    """Which performance counters this machine offers (perf_event_open), and why the others are missing.

    Hardware events (instructions, cycles, cache and branch misses) need a PMU the kernel exposes;
    software events (task-clock, page faults, context switches, migrations) need only perf_event_open.
    Every profiled run stores the events that open (hw.*, sw.*) and, always, the fallback that wait4's
    resource usage gives (ru.*: page faults, context switches, block IO); mantispy fit and build can
    target any of them (--metric)."""
    statuses = perf_counters.probe()
    if as_json:
        click.echo(json.dumps({"paranoid": perf_counters.paranoid_level(),
                               "events": [asdict(s) for s in statuses],
                               "fallback": list(perf_counters.RUSAGE_METRICS)}, indent=2))
        return
    click.echo(f"perf_event_paranoid: {perf_counters.paranoid_level()}")
    width = max(len(s.name) for s in statuses)
    for status in statuses:
        state = "available" if status.available else f"missing: {status.reason}"
        click.echo(f"  {status.name:<{width}}  {status.kind:<8}  {state}")
    opened = sum(s.available for s in statuses)
    click.echo(f"{opened} of {len(statuses)} events count here; every run also stores {', '.join(perf_counters.RUSAGE_METRICS)} "
               "(wait4's resource usage)")


def register(group: click.Group) -> None:
    """Add ``counters`` to the ``mantispy`` command group."""
    group.add_command(counters)
