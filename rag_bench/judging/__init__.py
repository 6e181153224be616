"""LLM judges over generated answers (optional; results recorded beside the deterministic metrics)."""
