"""The shared bottom of mantispy: what every stage imports, and nothing above it.

The stages (``mantispy.instrument``, ``mantispy.slicer``, ``mantispy.runtime``) and the top (the CLI,
profiling, modeling, build, report) all import from here; this package imports only the standard
library. ``version`` holds the release, ``types`` the vocabulary the stages' artefacts share (spans),
``launch`` how a program is started and measured.
"""
