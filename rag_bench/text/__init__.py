"""Text building blocks below chunking, retrieval and metrics: normalisation, tokens, sentences."""
