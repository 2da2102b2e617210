# The two quick-start commands (`make demo`, `make test`) install what they need into .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
MANTISPY := $(VENV)/bin/mantispy
STAMP := $(VENV)/.installed-stamp
BENCH_STAMP := $(VENV)/.bench-stamp
LINT_STAMP := $(VENV)/.lint-stamp
DEMO := demo-out

.PHONY: demo test lint bench bench-quick bench-components bench-splits bench-phases bench-monitor bench-dataflow bench-content bench-sampled stress-sampler clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	rm -rf $(DEMO) && mkdir -p $(DEMO)
	$(MANTISPY) build examples/campaigns/minisearch-demo.toml -o $(DEMO)/predictors/minisearch \
		--work $(DEMO)/work --jobs 2 --train-fraction 0.5
	$(PY) examples/minisearch/gen_queries.py --count 40 --seed 99 --shape mixed -o $(DEMO)/queries.txt
	@echo "predicting a new input (the same corpus, 40 new queries of mixed shapes), then running it:"
	$(MANTISPY) predict $(DEMO)/predictors/minisearch --cwd examples/campaigns -- --docs 1000 \
		--queries ../../$(DEMO)/queries.txt --hits 50 --fuzzy 1
	$(PY) -c "import resource, subprocess, sys, time; t = time.perf_counter(); subprocess.run([sys.executable, 'examples/minisearch/search.py', '--docs', '1000', '--queries', '$(DEMO)/queries.txt', '--hits', '50', '--fuzzy', '1'], check=True, stdout=subprocess.DEVNULL); u = resource.getrusage(resource.RUSAGE_CHILDREN); print(f'actual wall_s     {time.perf_counter() - t:.3f} s'); print(f'actual cpu_s      {u.ru_utime + u.ru_stime:.3f} s')"
	$(MANTISPY) report $(DEMO)/predictors/minisearch -o $(DEMO)/report.html

test: $(STAMP)
	$(PY) -m pytest -q -rs

$(LINT_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[test,lint]'
	touch $(LINT_STAMP)

# ruff on the repository, mypy on the run-time, the modeling, the shared bottom and the stage artefacts.
lint: $(LINT_STAMP)
	PYTHON=$(PY) bash .ci/lint

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $(BENCH_STAMP)

# The benchmark suite (benchmarks/bench_suite.py: five PyPI programs, 300 inputs each; writes
# benchmarks/RESULTS.md). bench-quick is CI's one-program run.
bench: $(BENCH_STAMP)
	$(PY) benchmarks/bench_suite.py

bench-quick: $(BENCH_STAMP)
	$(PY) benchmarks/bench_suite.py --quick --no-write

bench-components: $(BENCH_STAMP)
	$(PY) benchmarks/bench_instrument.py
	$(PY) benchmarks/bench_fit.py
	$(PY) benchmarks/bench_slicer.py
	$(PY) benchmarks/bench_slicing.py
	$(PY) benchmarks/bench_warm_evaluator.py

# Per-phase models and anomaly detection on sqlparse and pycparser (about 40 minutes; RESULTS.md).
bench-splits: $(BENCH_STAMP)
	$(PY) benchmarks/bench_splits.py

bench-phases: $(BENCH_STAMP)
	$(PY) benchmarks/bench_phases.py

# Does the stack sampler crash the program it samples? A stress test per Python version (3.11 here, 3.12
# and 3.13 from pyenv; about 5 minutes; RESULTS.md).
stress-sampler: $(BENCH_STAMP)
	$(PY) benchmarks/stress_sampler.py

# The bytecode backend against the source backend and coverage.py's sysmon core (pyenv 3.12 / 3.13;
# about 10 minutes; RESULTS.md with --write).
bench-monitor: $(BENCH_STAMP)
	$(PY) benchmarks/bench_monitor.py

# Dataflow what-if on five Dask workloads at five cluster configurations, and the recorder's overhead
# (about 7 minutes; RESULTS.md with --write).
bench-dataflow: $(BENCH_STAMP)
	$(PY) benchmarks/bench_dataflow.py

# Content features (issue 18): two builds per suite program on one profiled store, with and without them
# (about an hour for the four programs; RESULTS.md).
bench-content: $(BENCH_STAMP)
	$(PY) benchmarks/bench_content.py

# Sampled stand-ins for expensive counters over train/test splits of the suite's builds (RESULTS.md).
bench-sampled: $(BENCH_STAMP)
	$(PY) benchmarks/bench_sampled.py

clean:
	rm -rf $(DEMO) benchmarks/work
