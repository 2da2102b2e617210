"""Sampled features (issue 18): the program's counters counted on the first part of each input file and
scaled to the whole, as stand-ins for counters whose slices cost as much as the run.

* :mod:`.types`: the sampled table (``sampled.json``), the artefact between measuring and fitting;
* :mod:`.measure`: runs the instrumented program on every input's sample and fills the table.

The cutting and scaling live in :mod:`mantispy.runtime.sampled_input` (standard library only).
"""
