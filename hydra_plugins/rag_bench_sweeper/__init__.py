"""Hydra loads sweepers only from the ``hydra_plugins`` namespace; the logic is in rag_bench.runner.sweeper."""
