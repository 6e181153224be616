# Two entry points for a fresh machine: `make demo` and `make test` (see README).
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
LLM_STAMP := $(VENV)/.installed-llm-stamp
PYTHON ?= python3

.PHONY: venv llm parse demo test test-fast lint bench clean

# torch goes in FIRST, pinned: it is the CPU wheel on these machines. Letting the resolver pick
# torch later (sentence-transformers needs it) would pull a multi-GB CUDA build.
# constraints.txt is the verified set (a lock): pyproject.toml declares ranges so the package installs
# beside a team's own versions, and `make` and CI install exactly what was verified.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[test]'
	touch $(STAMP)

# The local-LLM generator and the ragas judge (the real-LLM end-to-end tests need them).
# llama-cpp-python has no binary wheel: it compiles (~5 min on 2 cores); GGML_NATIVE=OFF keeps
# the built wheel portable to other CPUs of this kind.
$(LLM_STAMP): $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PY) -m pip install -q -c constraints.txt -e '.[llm,judge]'
	touch $(LLM_STAMP)

venv: $(STAMP)

# The document parsers alone (already in '.[test]'): pure wheels from PyPI, no model download.
parse: venv
	$(PY) -m pip install -q -c constraints.txt -e '.[parse]'

llm: $(LLM_STAMP)

# 36 cells (3 chunkers × bm25/dense/hybrid × reranker none/dense × k 3/5), then the report.
demo: venv
	@$(VENV)/bin/rag-bench run -m +experiment=demo
	@$(VENV)/bin/rag-bench report experiments/demo

# Two workers (pytest-xdist), one per core; work stealing (--dist worksteal) so the slow end-to-end tests
# left in one worker's share do not keep it busy while the other core idles.
test: venv $(LLM_STAMP)
	$(PY) -m pytest -q -n 2 --dist worksteal --durations=25

# ruff over the whole checkout, notebooks included: pyflakes, pycodestyle, import order; mypy over the
# package (config in pyproject.toml).
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy rag_bench

test-fast: venv
	$(PY) -m pytest -q -m "not slow"

bench: venv
	$(PY) benchmarks/metrics.py

clean:
	rm -rf experiments/*/ reports/*/ .pytest_cache
