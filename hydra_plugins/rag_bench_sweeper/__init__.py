"""Hydra loads plugins only from the ``hydra_plugins`` namespace: rag_bench's sweeper and launcher;
their logic is in rag_bench.runner.sweeper and rag_bench.fast.launcher."""
