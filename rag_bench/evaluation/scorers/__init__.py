"""Scorers: each module owns its measures -- declares them and computes them from a run
(:mod:`rag_bench.evaluation.scorer`). The evaluation runs the ones the catalog lists
(:data:`rag_bench.evaluation.measures.SCORERS`): a new measure is one new file here and its line there."""
