"""The reference bootstrap's xorshift32 generator, vectorised with numpy.

The TypeScript package seeds its bootstrap with a small xorshift32 whose right shift is the
*arithmetic* shift of a signed 32-bit value (``state >> 17`` in JS), not the textbook logical
shift. Reproducing its values exactly therefore means reproducing that stream bit for bit.

A scalar Python loop over 10^8 draws (1,000 resamples of 100,000 paired items) would take
minutes, so the stream is produced in parallel: the generator is linear over GF(2) (every
step is a fixed 32x32 bit matrix, the arithmetic shift included, since it only copies the
sign bit), so the state ``p`` steps ahead is ``A^p`` applied to the current one. We jump to
``K`` evenly spaced starting points with precomputed powers of ``A`` and then step all ``K``
lanes together; the lanes, laid side by side, are exactly the sequential stream.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

U32 = npt.NDArray[np.uint32]

_MASK = 0xFFFFFFFF

# A linear map on 32-bit words, stored as the images of the 32 unit vectors (column i = f(1 << i)).
Columns = tuple[int, ...]


def seed_state(seed: int) -> int:
    """JS ``seed | 0 || 1``: wrap to int32, replace 0 by 1; returned as the unsigned bit pattern."""
    state = seed & _MASK
    return state if state != 0 else 1


def step(state: int) -> int:
    """One xorshift32 step on an unsigned 32-bit pattern, with the reference's signed shifts."""
    state ^= (state << 13) & _MASK
    # Arithmetic shift of the signed value: the sign bit is copied into the vacated top bits.
    shifted = state >> 17
    if state & 0x80000000:
        shifted |= 0xFFFF8000
    state ^= shifted
    state ^= (state << 5) & _MASK
    return state


def stream(seed: int, count: int) -> list[float]:
    """The first ``count`` values in [0, 1) the reference generator returns for ``seed`` (scalar)."""
    state = seed_state(seed)
    out: list[float] = []
    for _ in range(count):
        state = step(state)
        out.append(state / 4294967296.0)
    return out


def _step_columns() -> Columns:
    return tuple(step(1 << i) for i in range(32))


def _apply(cols: Columns, x: int) -> int:
    out = 0
    i = 0
    while x:
        if x & 1:
            out ^= cols[i]
        x >>= 1
        i += 1
    return out


def _compose(f: Columns, g: Columns) -> Columns:
    """f after g."""
    images = _apply_vec(_byte_tables(f), np.array(g, dtype=np.uint32))
    return tuple(int(x) for x in images)


_IDENTITY: Columns = tuple(1 << i for i in range(32))
_STEP: Columns = _step_columns()


@functools.lru_cache(maxsize=128)
def jump_columns(steps: int) -> Columns:
    """The linear map that advances the generator by ``steps`` steps (square-and-multiply)."""
    if steps > 1 and steps & (steps - 1) == 0:
        # Powers of two come in doubling runs (lane starts, chunk jumps): square the cached half.
        half = jump_columns(steps // 2)
        return _compose(half, half)
    result = _IDENTITY
    base = _STEP
    while steps:
        if steps & 1:
            result = _compose(base, result)
        base = _compose(base, base)
        steps >>= 1
    return result


def apply_jump(cols: Columns, state: int) -> int:
    """Apply a map from :func:`jump_columns` to one state."""
    return _apply(cols, state)


def jump(state: int, steps: int) -> int:
    """The state ``steps`` steps after ``state``."""
    return _apply(jump_columns(steps), state)


@functools.lru_cache(maxsize=128)
def jump_tables(steps: int) -> npt.NDArray[np.uint32]:
    """Byte lookup tables of the ``steps``-step jump, for applying it to many states at once."""
    return _byte_tables(jump_columns(steps))


def jump_many(states: U32, steps: int) -> U32:
    """Advance many states by ``steps`` steps at once."""
    return _apply_vec(jump_tables(steps), states)


_BYTE_BITS = (np.arange(256)[:, None] >> np.arange(8)) & 1 == 1
"""``_BYTE_BITS[v, j]``: bit ``j`` of byte value ``v``."""


def _byte_tables(cols: Columns) -> npt.NDArray[np.uint32]:
    # f(x) = T0[x & 255] ^ T1[(x >> 8) & 255] ^ T2[(x >> 16) & 255] ^ T3[x >> 24], where
    # Tb[v] is the XOR of the images of the bits set in v << 8b (f is linear). Built a bit
    # at a time over all 4 x 256 entries: the stream's first chunk needs about fifteen of
    # these tables, which a scalar loop took 2.5 ms each to fill.
    images = np.array(cols, dtype=np.uint32).reshape(4, 8)
    tables = np.zeros((4, 256), dtype=np.uint32)
    for j in range(8):
        tables ^= np.where(_BYTE_BITS[:, j], images[:, j : j + 1], np.uint32(0))
    return tables


def _apply_vec(tables: npt.NDArray[np.uint32], x: U32) -> U32:
    out: U32 = tables[0][x & 0xFF]
    out ^= tables[1][(x >> 8) & 0xFF]
    out ^= tables[2][(x >> 16) & 0xFF]
    out ^= tables[3][x >> 24]
    return out


def _step_vec(x: U32) -> None:
    """Advance every lane one step, in place."""
    x ^= x << np.uint32(13)
    x ^= (x.view(np.int32) >> np.int32(17)).view(np.uint32)
    x ^= x << np.uint32(5)


class Xorshift32Stream:
    """Sequential reader of the reference stream that hands out large blocks at once.

    ``take(m)`` returns the next ``m`` raw 32-bit outputs (the value in [0, 1) is ``u / 2**32``)
    exactly as ``m`` consecutive calls of the reference generator would.
    """

    _LANE_STEPS = 256

    def __init__(self, seed: int) -> None:
        self._state = seed_state(seed)  # state *before* the next output
        self._block: U32 | None = None

    @property
    def state(self) -> int:
        """The generator state before the next output (the last output, once one was taken)."""
        return self._state

    def reset(self, state: int) -> None:
        """Continue from a raw state (e.g. one computed with :func:`jump`), keeping the buffers."""
        self._state = state & _MASK

    def take(self, count: int, out: U32 | None = None) -> U32:
        """The next ``count`` outputs, written into ``out`` (a reusable buffer) when given."""
        if out is None:
            out = np.empty(count, dtype=np.uint32)
        else:
            out = out[:count]
        if count <= 0:
            return out
        if count <= 64:
            state = self._state
            for i in range(count):
                state = step(state)
                out[i] = state
            self._state = state
            return out
        lane_steps = min(self._LANE_STEPS, count)
        lanes = -(-count // lane_steps)
        x = _lane_starts(self._state, lanes, lane_steps)
        block = self._block
        if block is None or block.shape != (lane_steps, lanes):
            block = self._block = np.empty((lane_steps, lanes), dtype=np.uint32)
        for s in range(lane_steps):
            _step_vec(x)
            block[s] = x
        # Lane k holds positions k*lane_steps .. k*lane_steps + lane_steps - 1.
        full, rest = divmod(count, lane_steps)
        out[: full * lane_steps].reshape(full, lane_steps)[...] = block[:, :full].T
        if rest:
            out[full * lane_steps :] = block[:rest, full]
        self._state = int(out[-1])
        return out


def _lane_starts(state: int, lanes: int, lane_steps: int) -> U32:
    """The state each of ``lanes`` lanes starts from: lane k is ``k * lane_steps`` steps after
    ``state``, the starts built by doubling (one jump table per doubling)."""
    starts = np.array([state & _MASK], dtype=np.uint32)
    span = lane_steps
    while len(starts) < lanes:
        starts = np.concatenate([starts, _apply_vec(jump_tables(span), starts)])
        span *= 2
    return starts[:lanes].copy()


class ChunkedStream:
    """The reference stream in fixed-size chunks, for the bootstrap's cache-sized pipeline.

    Each chunk of ``chunk`` outputs is produced by ``chunk // lane_steps`` lanes stepped
    ``lane_steps`` times; the lanes of the next chunk are the current lanes jumped ahead by
    ``chunk`` steps (one table lookup per lane), so no per-chunk set-up is repeated.
    """

    def __init__(self, state: int, chunk: int = 1 << 19, lane_steps: int = 32) -> None:
        if chunk % lane_steps:
            raise ValueError("chunk must be a multiple of lane_steps")
        self.chunk = chunk
        self._steps = lane_steps
        lanes = chunk // lane_steps
        self._starts = _lane_starts(state, lanes, lane_steps)
        self._jump = jump_tables(chunk)
        self._block = np.empty((lane_steps, lanes), dtype=np.uint32)
        self._t = np.empty(lanes, dtype=np.uint32)
        self._u = np.empty(lanes, dtype=np.uint32)

    @property
    def lane_steps(self) -> int:
        """Rows of :meth:`next_block`: the steps each lane takes per chunk."""
        return self._steps

    def next_chunk(self, out: U32) -> None:
        """Write the next ``chunk`` outputs into ``out`` (length >= chunk), in stream order."""
        out[: self.chunk].reshape(-1, self._steps)[...] = self.next_block().T

    def next_block(self) -> U32:
        """The next ``chunk`` outputs as the ``(lane_steps, lanes)`` block the lanes wrote:
        ``block[s, k]`` is output ``k * lane_steps + s`` of the chunk.

        Putting them in stream order is a strided copy that costs as much as making them
        (17 of 35 ms for 2**18-output chunks); a reader that only adds the outputs up by lane
        does without it. The block is overwritten by the next call.
        """
        block = self._block
        t, u = self._t, self._u
        x = self._starts
        shl, xor, sar = np.left_shift, np.bitwise_xor, np.right_shift
        s13, s5, s17 = np.uint32(13), np.uint32(5), np.int32(17)
        t32, u32 = t.view(np.int32), u.view(np.int32)
        # One step per row, written straight into the block; no temporaries are allocated.
        for s in range(self._steps):
            shl(x, s13, out=t)
            xor(x, t, out=t)
            sar(t32, s17, out=u32)  # arithmetic shift of the signed value, as in JS
            xor(t, u, out=t)
            shl(t, s5, out=u)
            xor(t, u, out=block[s])
            x = block[s]
        self._starts = _apply_vec(self._jump, self._starts)
        return block
