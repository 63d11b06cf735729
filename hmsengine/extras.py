"""The optional extras (pyproject.toml) and the one-line message a missing one gets.

``hms serve``, ``hms mcp`` and ``hmsengine.client`` need the ``server`` extra, the bundled
embedder the ``embed`` extra, the Parquet inspector the ``files`` extra. Where one is missing
the user reads which extra and the exact command that installs it, never a bare
``ModuleNotFoundError``: :func:`require` raises :class:`MissingExtra` (an ``ImportError``, so
code that catches those still does) with that message.
"""

from __future__ import annotations

import importlib.util

# extra -> the modules it brings that hmsengine imports.
EXTRAS: dict[str, tuple[str, ...]] = {
    "server": ("starlette", "hypercorn", "httpx", "mcp"),
    "embed": ("onnxruntime", "tokenizers"),
    "files": ("pyarrow",),
}


def install_command(extra: str) -> str:
    """How to install ``extra``: from PyPI, and in a checkout of the repository."""
    return f"pip install 'hmsengine[{extra}]' (in a checkout of the repository: make install)"


class MissingExtra(ImportError):
    """An optional extra ``hmsengine`` needs for what was asked is not installed."""

    def __init__(self, what: str, extra: str, module: str) -> None:
        super().__init__(f"{what} needs the '{extra}' extra ({module} is not installed): "
                         f"{install_command(extra)}", name=module)
        self.extra = extra
        self.hint = install_command(extra)


def missing(extra: str, modules: tuple[str, ...] | None = None) -> str | None:
    """The first module of ``extra`` (or of ``modules``) that is not installed, or None."""
    for module in modules if modules is not None else EXTRAS[extra]:
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except (ImportError, ValueError):
            return module
    return None


def require(what: str, extra: str, modules: tuple[str, ...] | None = None) -> None:
    """Raise :class:`MissingExtra` when a module of ``extra`` (or ``modules``) is missing."""
    module = missing(extra, modules)
    if module is not None:
        raise MissingExtra(what, extra, module)


__all__ = ["EXTRAS", "MissingExtra", "install_command", "missing", "require"]
