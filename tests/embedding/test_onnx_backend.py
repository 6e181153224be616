"""embedder.backend: the torch identity is pinned, onnx vectors agree with torch, exports are cached.

Fast tests use a two-layer BERT with random weights that the test builds and saves as a
sentence-transformers folder (MiniLM's tokenizer); the slow test uses the packaged all-MiniLM-L6-v2.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from rag_bench.embedding import onnx_backend
from rag_bench.embedding.cache import text_key
from rag_bench.embedding.onnx_backend import OnnxSettings, Pipeline, ensure_onnx
from rag_bench.embedding.sentence_transformer import SentenceTransformerEmbedder, resolve_model, weights_hash
from rag_bench.errors import ConfigError
from rag_bench.runner.config import build

TEXTS = ["The dishwasher shows error E21.", "Refunds take up to 14 days.", "The dishwasher shows error E21.",
         "Annual plans renew on the first of the month; " * 30, "x"]
# Computed before embedder.backend existed (commit e1c1a8b): sha256 over the packaged folder's files,
# and the cache key of one text under "all-MiniLM-L6-v2@<that hash>" with no prefix. Neither may change:
# vectors cached by earlier versions must still be found.
MINILM_WEIGHTS = "12a627c3b64aa9ea"
MINILM_TEXT_KEY = "14a4e6765255d9c750a3ec0f76917e0912a0c55024c481798c1d9e90c9ab0842"


def test_torch_identity_and_cache_key_are_unchanged(tmp_path):
    path = resolve_model("all-MiniLM-L6-v2")
    assert weights_hash(path) == MINILM_WEIGHTS
    emb = SentenceTransformerEmbedder(cache_dir=str(tmp_path))
    assert emb.backend == "torch" and emb.identity == f"{path}@{MINILM_WEIGHTS}"
    assert SentenceTransformerEmbedder(cache_dir=str(tmp_path), backend="torch", quantize="none",
                                       per_channel=False, threads=1).identity == emb.identity  # onnx-only keys
    assert text_key(f"all-MiniLM-L6-v2@{MINILM_WEIGHTS}", "", "Refunds take up to 14 days.") == MINILM_TEXT_KEY


@pytest.mark.parametrize(("override", "key"), [("embedder.backend=tensorflow", "embedder.backend"),
                                               ("embedder.quantize=int4", "embedder.quantize"),
                                               ("embedder.threads=0", "embedder.threads"),
                                               ("embedder.per_channel=yes", "embedder.per_channel")])
def test_bad_backend_settings_are_config_errors(compose_cfg, override, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        build(compose_cfg([override]).embedder, "embedder")


def test_bad_backend_fails_when_built_directly_too():
    with pytest.raises(ConfigError, match=r"embedder\.backend must be one of torch, onnx, got 'tensorflow'"):
        SentenceTransformerEmbedder(backend="tensorflow")  # type: ignore[arg-type]


def test_onnx_needs_a_local_folder(tmp_path):
    emb = SentenceTransformerEmbedder(model="no-such-org/no-such-model", cache_dir=str(tmp_path), backend="onnx")
    with pytest.raises(ConfigError, match=r"embedder\.backend=onnx"):
        emb.embed_documents(["x"])


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A randomly initialised two-layer BERT + mean pooling + Normalize, saved as a sentence-transformers folder."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import AutoTokenizer, BertConfig, BertModel

    raw = tmp_path_factory.mktemp("tiny-bert")
    tok = AutoTokenizer.from_pretrained(resolve_model("all-MiniLM-L6-v2"))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(raw)
    tok.save_pretrained(raw)
    body = Transformer(str(raw), max_seq_length=64)
    st = SentenceTransformer(modules=[body, Pooling(32, pooling_mode="mean"), Normalize()], device="cpu")
    folder = tmp_path_factory.mktemp("tiny-st") / "model"
    st.save(str(folder))
    return str(folder)


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One export cache for the tests that do not count exports (each export takes a second or two)."""
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture
def fresh_encoders():
    onnx_backend.load_encoder.cache_clear()  # forget the process's encoders
    yield
    onnx_backend.load_encoder.cache_clear()  # forget the process's encoders


def test_fp32_onnx_matches_torch(tiny_model, shared_cache, fresh_encoders):
    torch_emb = SentenceTransformerEmbedder(model=tiny_model, cache_dir=str(shared_cache))
    onnx_emb = SentenceTransformerEmbedder(model=tiny_model, cache_dir=str(shared_cache), backend="onnx",
                                           quantize="none", batch_size=2)  # several batches of several lengths
    a, b = torch_emb.embed_documents(TEXTS), onnx_emb.embed_documents(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 32) and onnx_emb.dim == 32
    assert np.allclose(a, b, atol=1e-5)
    # The model's pipeline: max_seq_length 64 (not tokenizer.json's 128), Normalize listed.
    assert onnx_emb.encoder.pipeline == Pipeline(dim=32, max_seq_length=64, do_lower_case=False, normalize=True)
    assert np.allclose(np.linalg.norm(onnx_emb.encode_raw(TEXTS[:2]), axis=1), 1, atol=1e-5)


def test_export_traces_eager_attention_and_leaves_the_torch_model_alone(tiny_model, tmp_path, fresh_encoders):
    import onnx

    from rag_bench.embedding.sentence_transformer import load_model

    st = load_model(tiny_model, "cpu")
    before = st[0].model.config._attn_implementation
    fp32 = ensure_onnx(tiny_model, weights_hash(tiny_model), OnnxSettings("none"), tmp_path)
    assert st[0].model.config._attn_implementation == before  # the torch backend is unchanged
    ops = {n.op_type for n in onnx.load(str(fp32.path)).graph.node}
    # SDPA's export scrubs NaN from every score tensor (IsNaN + Where per layer); eager's does not.
    assert "Softmax" in ops and "IsNaN" not in ops


def test_runs_hold_at_most_tokens_per_run_positions(tiny_model, shared_cache, fresh_encoders, monkeypatch):
    monkeypatch.setattr(onnx_backend, "TOKENS_PER_RUN", 40)
    emb = SentenceTransformerEmbedder(model=tiny_model, cache_dir=str(shared_cache), backend="onnx", quantize="none")
    session = emb.encoder.session
    shapes = []

    class Spy:
        def run(self, out, feed):
            shapes.append(feed["input_ids"].shape)
            return session.run(out, feed)

    texts = [" ".join(["word"] * n) for n in (3, 70, 5, 12, 12, 7, 1, 2)]
    want = emb.encoder.encode(texts, batch_size=1)  # one text per run: no budget applies
    emb.encoder.session = Spy()  # type: ignore[assignment]
    got = emb.encoder.encode(texts, batch_size=3)
    assert np.allclose(got, want, atol=1e-5)  # fp32: batching does not change vectors
    # Longest first; the 70-word text (truncated to max_seq_length 64) is over the budget: it runs alone,
    # then rows x width <= 40 and rows <= batch_size.
    assert shapes[0] == (1, 64) and all(r * w <= 40 and r <= 3 for r, w in shapes[1:])
    assert sum(r for r, _ in shapes) == len(texts)


def test_export_is_cached_and_not_redone(tiny_model, tmp_path, fresh_encoders, monkeypatch):
    weights = weights_hash(tiny_model)
    first = ensure_onnx(tiny_model, weights, OnnxSettings("int8"), tmp_path)
    assert first.exported and first.path.is_file()
    mtime = os.stat(first.path).st_mtime_ns
    again = ensure_onnx(tiny_model, weights, OnnxSettings("int8"), tmp_path)
    assert not again.exported and again == onnx_backend.OnnxFile(first.path, first.sha256, exported=False)
    assert os.stat(first.path).st_mtime_ns == mtime
    # A new embedder (new process: no in-memory encoder) reads the file from disk and exports nothing.
    def boom(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_backend, "export_fp32", boom)
    monkeypatch.setattr(onnx_backend, "quantize_int8", boom)
    emb = SentenceTransformerEmbedder(model=tiny_model, cache_dir=str(tmp_path), backend="onnx")
    emb.embed_documents(TEXTS[:1])
    assert emb.encoder.file.path == first.path and not emb.encoder.file.exported
    # int8 and fp32 are different cache entries; the fp32 export was made once, to quantise from.
    fp32 = ensure_onnx(tiny_model, weights, OnnxSettings("none"), tmp_path)
    assert not fp32.exported and fp32.path != first.path


def test_corrupt_export_is_redone(tiny_model, tmp_path, fresh_encoders):
    weights = weights_hash(tiny_model)
    first = ensure_onnx(tiny_model, weights, OnnxSettings("none"), tmp_path)
    first.path.write_bytes(b"not a model")
    again = ensure_onnx(tiny_model, weights, OnnxSettings("none"), tmp_path)
    assert again.exported and again.sha256 == first.sha256  # the export is deterministic


@pytest.mark.parametrize("name, damage", [
    ("pipeline.json", lambda t: t.replace('"normalize": true', '"normalize": false')),  # poisoned: other numbers
    ("tokenizer.json", lambda t: t[: len(t) // 2]),  # damaged: would not load
])
def test_every_file_of_an_export_is_checked_and_a_mismatch_exported_again(tiny_model, tmp_path, fresh_encoders,
                                                                           name, damage):
    weights = weights_hash(tiny_model)
    first = ensure_onnx(tiny_model, weights, OnnxSettings("none"), tmp_path)
    want = onnx_backend.OnnxEncoder(first.path.parent).encode(TEXTS[:3], batch_size=2)
    target = first.path.parent / name
    text = target.read_text(encoding="utf-8")
    assert damage(text) != text
    target.write_text(damage(text), encoding="utf-8")
    again = ensure_onnx(tiny_model, weights, OnnxSettings("none"), tmp_path)
    assert again.exported and target.read_text(encoding="utf-8") == text  # exported again, same bytes
    got = onnx_backend.OnnxEncoder(again.path.parent).encode(TEXTS[:3], batch_size=2)
    assert np.allclose(got, want, atol=1e-6)


def test_cache_keys_differ_between_backends_and_settings(tiny_model, shared_cache, fresh_encoders):
    def emb(**kw):
        return SentenceTransformerEmbedder(model=tiny_model, cache_dir=str(shared_cache), **kw)

    torch_e, fp32, int8 = emb(), emb(backend="onnx", quantize="none"), emb(backend="onnx")
    per_tensor = emb(backend="onnx", per_channel=False)
    idents = [e.identity for e in (torch_e, fp32, int8, per_tensor)]
    assert len(set(idents)) == 4
    assert idents[0] == f"{torch_e.model_path}@{weights_hash(tiny_model)}"
    assert all(i.startswith(idents[0] + "|onnx|quantize=") for i in idents[1:])
    assert f"file={int8.encoder.file.sha256[:16]}" in int8.identity and "int8,per_channel" in int8.identity
    # The export's settings and code version key the export cache folder.
    assert OnnxSettings("none").describe() == {"quantize": "none", "attention": "eager"}
    import json

    stored = json.loads((int8.encoder.file.path.parent / "settings.json").read_text())
    assert stored["export_version"] == onnx_backend.EXPORT_VERSION >= 2 and stored["attention"] == "eager"
    assert {"onnxruntime", "torch", "transformers"} <= stored.keys()
    assert "int8,per_tensor" in per_tensor.identity
    # per_channel does not matter without quantisation: same file, same key.
    assert emb(backend="onnx", quantize="none", per_channel=False).identity == fp32.identity
    # Vectors of one backend are never served to another through the shared cache.
    torch_e.embed_documents(TEXTS)
    int8.embed_documents(TEXTS)
    assert int8.usage().cache_hits == 0 and int8.usage().encoded == 4
    again = emb(backend="onnx")
    again.embed_documents(TEXTS)
    assert again.usage().encoded == 0 and again.usage().cache_hits == len(TEXTS)


def test_threads_reach_the_session(tiny_model, shared_cache, fresh_encoders):
    emb = SentenceTransformerEmbedder(model=tiny_model, cache_dir=str(shared_cache), backend="onnx", threads=1)
    assert emb.encoder.session.get_session_options().intra_op_num_threads == 1


def test_other_pooling_is_refused(tiny_model, tmp_path, fresh_encoders):
    import json
    import shutil

    folder = tmp_path / "cls-model"
    shutil.copytree(tiny_model, folder)
    cfg = folder / "1_Pooling" / "config.json"
    cfg.write_text(json.dumps({**json.loads(cfg.read_text()), "pooling_mode": "cls"}))
    with pytest.raises(ConfigError, match="mean pooling only"):
        SentenceTransformerEmbedder(model=str(folder), cache_dir=str(tmp_path), backend="onnx").embed_documents(["x"])


@pytest.mark.slow
def test_packaged_minilm_onnx_int8_agrees_with_torch(tmp_path, fresh_encoders, monkeypatch):
    """Offline export of the packaged model; int8 vectors within mean cosine 0.99 of torch on demo chunks."""
    from rag_bench.chunking.section import SectionChunker
    from rag_bench.data.loader import load_dataset
    from rag_bench.runner.config import DEMO_DATASET

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    chunks = [c.text for c in SectionChunker().chunk(list(load_dataset(DEMO_DATASET).documents.values()))][:60]
    torch_v = SentenceTransformerEmbedder(cache_dir=str(tmp_path)).embed_documents(chunks)
    fp32 = SentenceTransformerEmbedder(cache_dir=str(tmp_path), backend="onnx", quantize="none")
    int8 = SentenceTransformerEmbedder(cache_dir=str(tmp_path), backend="onnx")
    cos_fp32 = (fp32.embed_documents(chunks) * torch_v).sum(axis=1)
    cos_int8 = (int8.embed_documents(chunks) * torch_v).sum(axis=1)
    assert cos_fp32.min() > 0.9999
    assert cos_int8.mean() >= 0.99 and cos_int8.min() >= 0.95, (cos_int8.mean(), cos_int8.min())
    assert int8.dim == 384 and int8.encoder.file.exported  # exported here, from the packaged folder
