"""Adapters: other systems' results read as a run the evaluation scores like ours (``rag-bench
evaluate``: an application's outputs, a TREC run, a ragas set)."""
