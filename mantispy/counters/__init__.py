"""Performance counters beyond whole runs (issue 22): per-function counter profiles.

* :mod:`.function_profile`: the per-function profile artefact (``mantispy-function-counters`` JSON, written
  by :mod:`mantispy.runtime.function_counters`): typed, checked on load, and rendered as a table.
"""
