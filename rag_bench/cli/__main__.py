"""``python -m rag_bench.cli``: the ``rag-bench`` command line."""

from rag_bench.cli.main import entry

entry()
