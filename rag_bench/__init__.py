"""rag_bench: evaluation harness for RAG configurations."""

__version__ = "0.1.0"
