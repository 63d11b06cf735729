"""The numba decorators every kernel uses: ``jit`` for kernels, ``inline`` for their scalar parts.

Every kernel is compiled with ``nogil=True`` (a worker thread runs it while the event loop goes
on; ``jit_held``: a kernel only ever called inline for a few microseconds keeps the GIL) and
``cache=True`` (the first compile of all kernels takes tens of seconds on a 2-core machine;
loading them from numba's on-disk cache takes a fraction of a second). There is deliberately no
``fastmath`` and no ``parallel``: scores must be bit-for-bit reproducible, and both options let
the compiler reorder floating-point sums.

With ``NUMBA_DISABLE_JIT=1`` numba's ``njit`` hands the Python function back unchanged, so every
kernel runs as plain Python over numpy arrays (slow, but the same results; the test-suite runs in
that mode too). Kernels therefore use only constructs that also work as plain Python: no numba
typed containers, no ``numba.prange``.

Cache caveat: numba keys a cached kernel on its own source file only. A kernel that calls a jitted
helper from another module (``cosine`` and ``quantized`` use ``topk``'s helpers, ``quantized``
``cosine``'s kernel, every BM25 kernel inlines ``bm25.bm25_term``, ``pruning`` calls ``dense``'s
kernel, ``fusion.fuse_one_view`` calls ``bm25``'s, ``cosine``'s and ``filters``') keeps a stale
compiled copy after that helper's file changes until its own file changes too; delete
``hmsengine/kernels/__pycache__`` after editing a helper during development.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., Any])

_njit = functools.partial(numba.njit, nogil=True, cache=True)
_njit_held = functools.partial(numba.njit, nogil=False, cache=True)
_njit_inline = functools.partial(numba.njit, nogil=True, cache=True, inline="always")


def jit(func: F) -> F:
    """Compile ``func`` as a kernel: nopython, ``nogil=True``, ``cache=True``, no fastmath.

    Typed as the identity so that the kernel's own annotations reach mypy.
    """
    return cast(F, _njit(func))


def jit_held(func: F) -> F:
    """Compile ``func`` as a kernel that keeps the GIL (``nogil=False``; otherwise as ``jit``).

    For a kernel that is only ever called inline, on the event loop's thread, with a few
    microseconds of work (the plain lane's ``bm25_lane_topk``). Releasing the GIL for so short a
    call gains nothing and hands the GIL to any thread that wants it (a merge, the writer's
    record encoding: Python for milliseconds); taking it back then waits for that thread's
    switch interval (5 ms). Measured at 50k documents with one busy Python thread beside the
    queries: 3.8-4.3k q/s and a p99 of 9.3 ms with ``nogil=True``, 8.1-10.5k q/s and 0.2 ms
    holding the GIL (no busy thread: the same). Kernels that may run long, in worker threads,
    stay ``jit``.
    """
    return cast(F, _njit_held(func))


def held_twin(kernel: F) -> F:
    """A ``jit_held`` copy of the ``jit`` kernel ``kernel``: the same Python function compiled
    once more, keeping the GIL, for the calls that run inline on the event loop (the general
    query path's small queries: a k above the plain lane's, filters) while the original runs
    in worker threads. Measured at 50k documents with one busy Python thread beside the
    queries: a k=50 search took 10.8 ms at the median with the GIL released twice a query.

    The copy is a new function object named ``<name>__held``: numba keys its on-disk cache by
    the function's qualified name and code, not its options, so the copy needs a name of its
    own or the two would load each other's compiled code. With ``NUMBA_DISABLE_JIT=1`` both
    are the plain function.
    """
    func = getattr(kernel, "py_func", kernel)
    twin = types.FunctionType(func.__code__, func.__globals__, func.__name__ + "__held",
                              func.__defaults__, func.__closure__)
    twin.__qualname__ = func.__qualname__ + "__held"
    twin.__module__ = func.__module__
    twin.__doc__ = func.__doc__
    twin.__kwdefaults__ = func.__kwdefaults__
    twin.__annotations__ = dict(func.__annotations__)
    return cast(F, _njit_held(twin))


def inline(func: F) -> F:
    """Compile ``func`` as a scalar helper that numba inlines into every kernel calling it.

    ``inline="always"`` works on numba's own intermediate representation: the calling kernel is
    compiled as if the helper's arithmetic were written out in its loop (same IEEE operations,
    same order, so the same bits). Callable from plain Python too, through numba's dispatcher.
    """
    return cast(F, _njit_inline(func))
