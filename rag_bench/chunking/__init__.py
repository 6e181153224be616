"""chunking stage."""
