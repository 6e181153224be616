"""Rerankers over a retrieved shortlist."""
