"""Stack sampling, per-process resource time series and flame graphs (BDWatchdog's analysis, in Python).

One job per module:

* :mod:`.types`: the vocabulary (a recording's metadata, a sample, a point, a query window);
* :mod:`.store`: recordings in a SQLite store (the run store or its own file), one transaction per batch;
* :mod:`.resources`: the per-process resource poller (psutil, plus Linux software perf events);
* :mod:`.perf_events`: ``perf_event_open`` for software counters, through ctypes;
* :mod:`.recorder`: ``mantispy record``: runs a program with the sampler bootstrap, polls, ingests;
* :mod:`.flame`: stacks of a window aggregated (and differenced) into a flame tree;
* :mod:`.render_folded`, :mod:`.render_speedscope`, :mod:`.render_svg`, :mod:`.render_html`: one
  renderer per flame graph format; :mod:`.series_formats`: the time series as csv, json, OpenTSDB or
  Prometheus text.

The sampler itself runs inside the recorded program: :mod:`mantispy.runtime.sampler` (standard library
and ctypes), started by :mod:`mantispy.runtime.sample_boot`; a thread of its own samples every thread, or,
with ``--sampler signal``, every thread but the main one, which a SIGPROF timer on its CPU clock samples.
"""
