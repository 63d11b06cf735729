"""Arrays read through their addresses: how one kernel call reaches every segment of a snapshot.

A numba call unboxes each array argument (~60-80 ns) and dispatches on all of their types: one
call per segment with seventeen arguments cost ~1.3 us before any work, most of what a small
segment costs a query. A caller instead passes a table of addresses (``int64`` rows, one per
segment) and the kernel views the arrays behind them with ``array_at``, one call for them all.

``address_of`` gives the address of an array's first element; ``array_at`` views ``n``
elements of a dtype there, without a copy and without owning them. The caller keeps every array
whose address is in a table alive for as long as the table is used, and passes only C-contiguous
arrays of the dtype it names (``lane.lane_row`` checks both). Both work as plain Python too
(``NUMBA_DISABLE_JIT=1``): through ctypes there, through an ``inttoptr`` and ``numba.carray`` in
compiled code.
"""

from __future__ import annotations

import ctypes
from typing import Any, cast

import numba
import numpy as np
import numpy.typing as npt
from numba import types
from numba.core.extending import intrinsic, overload


def address_of(array: npt.NDArray[Any]) -> int:
    """The address of ``array``'s first element (an ``int``; 0 means nothing to read)."""
    return int(array.ctypes.data)


def array_at(address: int, n: int, dtype: Any) -> npt.NDArray[Any]:
    """A view of ``n`` elements of ``dtype`` at ``address`` (``address_of`` of a live,
    C-contiguous array of that dtype and at least ``n`` elements). The view owns nothing."""
    if n == 0:
        return np.empty(0, dtype=dtype)
    size = int(n) * np.dtype(dtype).itemsize
    return np.frombuffer((ctypes.c_char * size).from_address(int(address)), dtype=dtype)


@intrinsic
def _pointer(typingctx: Any, address: Any, dtype: Any) -> Any:
    """``address`` (an int64) as a pointer to ``dtype`` (a numba number class)."""
    if not isinstance(address, types.Integer) or not isinstance(dtype, types.NumberClass):
        return None
    signature = types.CPointer(dtype.instance_type)(address, dtype)  # type: ignore[no-untyped-call]

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        return builder.inttoptr(args[0], context.get_value_type(sig.return_type))

    return signature, codegen


# The intrinsic and numba's carray as compiled code calls them (their Python signatures are
# not the ones compiled code sees).
_as_pointer = cast(Any, _pointer)
_carray = cast(Any, numba).carray


@overload(address_of)
def _address_of_compiled(array: Any) -> Any:
    def impl(array: Any) -> Any:
        return array.ctypes.data
    return impl


@overload(array_at)
def _array_at_compiled(address: Any, n: Any, dtype: Any) -> Any:
    def impl(address: Any, n: Any, dtype: Any) -> Any:
        return _carray(_as_pointer(address, dtype), n)
    return impl
