"""Embedding stage: models and the persistent content-addressed cache."""
