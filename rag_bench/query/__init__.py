"""Query transforms: what the retriever searches for, made from the question (and its conversation)."""
