# Two entry points for a fresh machine: `make demo` and `make test` (see README).
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PYTHON ?= python3

.PHONY: venv demo test test-fast bench clean

# torch goes in FIRST, pinned: it is the CPU wheel on these machines. Letting the resolver pick
# torch later (sentence-transformers needs it) would pull a multi-GB CUDA build.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: venv
	$(VENV)/bin/rag-bench run -m +experiment=demo
	$(VENV)/bin/rag-bench report experiments/demo

test: venv
	$(PY) -m pytest -q

test-fast: venv
	$(PY) -m pytest -q -m "not slow"

bench: venv
	$(PY) benchmarks/metrics.py

clean:
	rm -rf experiments/*/ reports/*/ .pytest_cache
