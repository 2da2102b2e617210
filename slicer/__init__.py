"""Static analysis of Python programs: control flow, dependences, call graph and slicing (later stages)."""
