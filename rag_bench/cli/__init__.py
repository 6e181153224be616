"""The ``rag-bench`` command line: one module per command (:mod:`rag_bench.cli.main` holds the table)."""

from rag_bench.cli.main import entry, main

__all__ = ["entry", "main"]
