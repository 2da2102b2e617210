# The two quick-start commands (`make demo`, `make test`) install what they need into .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
MANTISPY := $(VENV)/bin/mantispy
STAMP := $(VENV)/.installed-stamp
DEMO := demo-out

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	rm -rf $(DEMO) && mkdir -p $(DEMO)
	$(MANTISPY) instrument examples/minisearch -o $(DEMO)/minisearch
	$(PY) examples/minisearch/gen_queries.py --count 30 --seed 7 --shape mixed -o $(DEMO)/queries.txt
	$(MANTISPY) run $(DEMO)/minisearch --features-out $(DEMO)/features.json -- \
		search.py --docs 2000 --queries $(DEMO)/queries.txt --fuzzy 1
	$(MANTISPY) features $(DEMO)/features.json --manifest $(DEMO)/minisearch --top 15
	$(MANTISPY) profile examples/campaigns/minisearch-demo.toml --store $(DEMO)/mantis.db
	$(MANTISPY) fit --store $(DEMO)/mantis.db --train-fraction 0.5 --no-sensitivity -o $(DEMO)/model.json
	$(MANTISPY) slice examples/minisearch --entry search.py --feature search.py:run:loop:2 -o $(DEMO)/evaluator
	@echo "evaluator of search.py:run:loop:2 on a new input (--docs 700):"
	$(PY) $(DEMO)/evaluator/evaluate.py --docs 700 --query data

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) benchmarks/bench_instrument.py

clean:
	rm -rf $(DEMO) benchmarks/work
