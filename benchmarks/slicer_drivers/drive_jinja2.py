"""Driver for benchmarks/bench_slicer.py: renders a template file with a table of N rows (autoescaped). The
entry script a build of a program using jinja2 would analyse; never run by the benchmark."""

import sys

from jinja2 import DictLoader, Environment

env = Environment(loader=DictLoader({"page": open(sys.argv[1]).read()}), autoescape=True)
rows = [{"name": f"item {i}", "price": i * 1.5} for i in range(int(sys.argv[2]))]
print(len(env.get_template("page").render(rows=rows, title="Report")))
