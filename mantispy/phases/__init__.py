"""Phases of a recorded run (phase-aware modeling, ../shared/papers/phase-aware-modeling.md): time slices
in which the program runs a stable set of functions with a stable distribution.

* :mod:`.epochs`: a recording's samples cut into epochs, each summarised by the share of time of the
  functions it runs (the innermost frame of the program's own code, library and interpreter frames
  skipped unless asked for);
* :mod:`.similarity`: the paper's two match metrics, f_sim (shared functions) and t_sim (squared-chord
  similarity of their time shares);
* :mod:`.detect`: consecutive matching epochs grouped into phases, with a confidence rule so that one
  odd epoch is not a phase, and phases that recur labelled alike;
* :mod:`.observe`: each phase's duration, CPU time, CPU use, peak RSS and IO from the recording;
* :mod:`.own_time`: each function's own time (the innermost program frame of each sample), phase by phase;
* :mod:`.training`: a campaign's sampled uninstrumented runs with their inputs and features;
* :mod:`.model`: per-phase models (and whole-run ones) with their residual spreads, as JSON;
* :mod:`.anomaly`: ``mantispy check``'s rule: which phase and resource of a run departs;
* :mod:`.report_section`: the build report's "Phases across runs".
"""
