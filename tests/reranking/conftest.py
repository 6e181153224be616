"""Fixtures of the reranker tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory):
    """A randomly initialised one-layer BERT cross-encoder with MiniLM's tokenizer, saved to disk."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from rag_bench.embedding.sentence_transformer import resolve_model

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    tok = AutoTokenizer.from_pretrained(resolve_model("all-MiniLM-L6-v2"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
