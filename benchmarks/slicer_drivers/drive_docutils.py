"""Driver for benchmarks/bench_slicer.py: publishes a reStructuredText file as HTML. The entry script a build
of a program using docutils would analyse; never run by the benchmark."""

import sys

from docutils.core import publish_string

print(len(publish_string(open(sys.argv[1]).read(), writer_name="html")))
