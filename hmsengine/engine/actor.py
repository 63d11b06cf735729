"""Actor plumbing: the one-shot reply slot, exception-group unwrapping, background threads.

A caller sends a message carrying a :class:`ReplySlot`; the actor resolves the slot with the
outcome (a value or the exception it hit), so an error inside the actor re-raises in the caller's
task and never kills the actor.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, NoReturn, TypeVar

import outcome
import trio

T = TypeVar("T")


class ReplySlot(Generic[T]):
    """A one-shot slot: the actor sets it once; one caller waits for it.

    Built on trio's low-level parking rather than a ``trio.Event`` (an event's lot and its
    attrs object cost a few microseconds per write, on the path every put takes). Set and
    waited on from the event loop's thread only, like any trio primitive.
    """

    __slots__ = ("_outcome", "_task")

    def __init__(self) -> None:
        self._outcome: outcome.Outcome[T] | None = None
        self._task: trio.lowlevel.Task | None = None

    @property
    def done(self) -> bool:
        return self._outcome is not None

    def _resolve(self, result: outcome.Outcome[T]) -> None:
        if self._outcome is None:
            self._outcome = result
            task, self._task = self._task, None
            if task is not None:
                trio.lowlevel.reschedule(task)

    def set_value(self, value: T) -> None:
        self._resolve(outcome.Value(value))

    def set_error(self, error: BaseException) -> None:
        self._resolve(outcome.Error(error))

    def result(self) -> T:
        """The reply of a slot already set: its value, or its exception raised."""
        if self._outcome is None:
            raise RuntimeError("the reply slot was never set")
        return self._outcome.unwrap()

    async def wait(self) -> T:
        """Wait for the actor's reply and return it, or raise the actor's exception.

        Always a checkpoint. Cancellation: the caller stops waiting, but the request may still
        take effect (a write already handed to the writer is committed or not as one unit,
        independently).
        """
        if self._outcome is None:
            self._task = trio.lowlevel.current_task()

            def abort(_: Any) -> trio.lowlevel.Abort:
                self._task = None
                return trio.lowlevel.Abort.SUCCEEDED

            await trio.lowlevel.wait_task_rescheduled(abort)
        else:
            await trio.lowlevel.checkpoint()
        assert self._outcome is not None
        return self._outcome.unwrap()


def raise_single(group: BaseExceptionGroup[BaseException]) -> NoReturn:
    """Re-raise an exception group from our own nurseries as one plain exception.

    Policy (no ``ExceptionGroup`` escapes a public call): our actors never raise out of their
    loops, so a group reaching a public boundary holds the caller's own exception, perhaps beside
    ``Cancelled`` leaves of sibling tasks. Raise the first leaf that is not ``Cancelled``; if all
    are ``Cancelled``, raise the first one so the enclosing cancel scope can absorb it. The other
    leaves are attached as a note.
    """
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        else:
            leaves.append(exc)

    walk(group)
    chosen = next((e for e in leaves if not isinstance(e, trio.Cancelled)), leaves[0])
    others = [e for e in leaves if e is not chosen and not isinstance(e, trio.Cancelled)]
    if others:
        chosen.add_note("also raised: " + "; ".join(repr(e) for e in others))
    raise chosen from chosen.__cause__


class Background:
    """A function started at once in a thread of its own (not trio's pool: the opener needs it
    beside a ``to_thread`` call of its own); ``join`` waits, ``result`` waits and re-raises what
    the function raised. Daemon, so an abandoned one never holds up interpreter exit."""

    def __init__(self, function: Callable[[], Any], name: str = "hmsengine-background") -> None:
        self._error: BaseException | None = None
        self._value: Any = None
        self._function = function
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._function()
        except BaseException as exc:  # handed to the opener by result()
            self._error = exc

    def join(self) -> None:
        self._thread.join()

    def result(self) -> Any:
        """What the function returned (after waiting for it), or what it raised, re-raised.
        The value is handed over, not kept: a second call returns None."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        value, self._value = self._value, None
        return value


class Warming:
    """A warm-up that runs in a thread of its own from the moment it is made (the engine's:
    ``kernels.warmup.warm_up``): ``function(stop)`` asks ``stop()`` between its steps. ``wait``
    blocks until it is done; ``stop`` makes it stop after the current step and waits for that.
    What it raises is not re-raised: a kernel that could not be loaded raises at its first use,
    where the caller gets it."""

    def __init__(self, function: Callable[[Callable[[], bool]], None], *, needed: bool = True) -> None:
        self._stopping = threading.Event()
        self.needed = needed  # False: nothing to warm up, no thread at all
        self._thread = Background(lambda: function(self._stopping.is_set),
                                  "hmsengine-warm-up") if needed else None

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def cancel(self) -> None:
        """Ask it to stop after the current step (returns at once)."""
        self._stopping.set()

    def stop(self) -> None:
        self.cancel()
        self.wait()
