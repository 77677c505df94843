"""coral's own observation and action spaces, used when `gymnasium` is not installed.

The classes have Gymnasium's names, attributes and methods (`sample`, `contains`,
`seed`, `np_random`, `shape`, `dtype`), so code written against
`gymnasium.spaces` runs unchanged on them. Two deliberate differences:

- `Dict` keeps its keys in insertion order (Gymnasium sorts the keys of a plain
  dict); coral's envs declare their keys in the order their buffers hold them.
- `batch_space` handles only these classes (Gymnasium's is extensible per type).

This module depends on numpy only; it never imports the C++ extension.
"""
from __future__ import annotations

import copy
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

__all__ = ["Space", "Box", "Discrete", "MultiDiscrete", "Dict", "Tuple", "batch_space"]


def _new_generator(seed: int | None) -> tuple[np.random.Generator, int]:
    """A PCG64 generator and the integer seed it was made from (fresh entropy when `seed` is None)."""
    if seed is None:
        seed = int(np.random.SeedSequence().entropy)
    elif isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    seed = int(seed)
    return np.random.Generator(np.random.PCG64(seed)), seed


class Space:
    """Base of every space: a shape, a dtype and a lazily seeded random generator."""

    def __init__(self, shape: Sequence[int] | None, dtype: Any, seed: int | np.random.Generator | None = None):
        self._shape = None if shape is None else tuple(int(d) for d in shape)
        self.dtype = None if dtype is None else np.dtype(dtype)
        self._np_random: np.random.Generator | None = None
        if isinstance(seed, np.random.Generator):
            self._np_random = seed
        elif seed is not None:
            self.seed(seed)

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The shape of one element (None for the composite spaces)."""
        return self._shape

    @property
    def np_random(self) -> np.random.Generator:
        """The generator `sample` draws from; seeded from fresh entropy on first use if `seed` was never called."""
        if self._np_random is None:
            self.seed()
        return self._np_random

    def seed(self, seed: int | None = None) -> Any:
        """Reseed this space's generator; returns the seed used (fresh entropy when `seed` is None)."""
        self._np_random, used = _new_generator(seed)
        return used

    def sample(self) -> Any:
        """One element of the space, drawn from `np_random`."""
        raise NotImplementedError

    def contains(self, x: Any) -> bool:
        """Whether `x` is an element of the space."""
        raise NotImplementedError

    def __contains__(self, x: Any) -> bool:
        return self.contains(x)


def _is_integer_dtype(dtype: np.dtype) -> bool:
    return np.issubdtype(dtype, np.integer)


def _bounds_repr(bound: np.ndarray) -> str:
    """A scalar when every entry is the same (as Gymnasium prints Box bounds), else the array."""
    if bound.size > 0 and np.all(bound == bound.flat[0]):
        return str(bound.flat[0])
    return str(bound)


class Box(Space):
    """A (possibly unbounded) box in R^shape: every element is an array of `shape` and `dtype`
    with low <= x <= high entrywise.

    `low` and `high` may be scalars (broadcast to `shape`) or arrays; `shape` defaults to
    their shape. Integer boxes clip infinite bounds to the dtype's range.
    """

    def __init__(self, low: Any, high: Any, shape: Sequence[int] | None = None, dtype: Any = np.float32,
                 seed: int | np.random.Generator | None = None):
        dtype = np.dtype(dtype)
        if not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating) or dtype == np.bool_):
            raise ValueError(f"Box dtype must be an integer, float or bool type, got {dtype}")
        if shape is None:
            shapes = [np.shape(b) for b in (low, high) if np.ndim(b) > 0]
            if not shapes:
                raise ValueError("Box needs a shape when low and high are both scalars")
            shape = shapes[0]
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"Box shape must have no negative dimension, got {shape}")
        self.low = self._broadcast_bound(low, shape, dtype, "low")
        self.high = self._broadcast_bound(high, shape, dtype, "high")
        if np.any(self.low > self.high):
            raise ValueError(f"Box low must be <= high everywhere, got low={self.low}, high={self.high}")
        self.bounded_below = np.isfinite(self.low) if not _is_integer_dtype(dtype) else np.ones(shape, bool)
        self.bounded_above = np.isfinite(self.high) if not _is_integer_dtype(dtype) else np.ones(shape, bool)
        super().__init__(shape, dtype, seed)

    @staticmethod
    def _broadcast_bound(bound: Any, shape: tuple[int, ...], dtype: np.dtype, name: str) -> np.ndarray:
        raw = np.asarray(bound, dtype=np.float64 if not _is_integer_dtype(dtype) else None)
        if raw.ndim > 0 and raw.shape != shape:
            raise ValueError(f"Box {name} has shape {raw.shape}, expected {shape}")
        if raw.dtype.kind == "f" and np.any(np.isnan(raw)):
            raise ValueError(f"Box {name} must not contain NaN")
        full = np.broadcast_to(raw, shape)
        if _is_integer_dtype(dtype) and not np.issubdtype(full.dtype, np.integer):
            # Infinite bounds of an integer box become the dtype's limits.
            info = np.iinfo(dtype)
            finite = np.isfinite(full)
            clipped = np.empty(shape, dtype=dtype)
            clipped[finite] = full[finite]
            clipped[full == np.inf] = info.max
            clipped[full == -np.inf] = info.min
            return clipped
        return np.array(full, dtype=dtype)

    def is_bounded(self, manner: str = "both") -> bool:
        """Whether every dimension is bounded below ("below"), above ("above") or both ("both")."""
        below = bool(np.all(self.bounded_below))
        above = bool(np.all(self.bounded_above))
        if manner == "both":
            return below and above
        if manner == "below":
            return below
        if manner == "above":
            return above
        raise ValueError(f"manner must be 'both', 'below' or 'above', got {manner!r}")

    def sample(self) -> np.ndarray:
        """Uniform where both bounds are finite, low + Exp(1) / high - Exp(1) where one is, N(0, 1) where neither."""
        rng = self.np_random
        if self.dtype == np.bool_:
            return rng.integers(self.low.astype(np.int8), self.high.astype(np.int8), size=self.shape,
                                endpoint=True).astype(np.bool_)
        if _is_integer_dtype(self.dtype):
            # Integer bounds are always finite (infinite ones became the dtype's limits).
            return rng.integers(self.low, self.high, size=self.shape, dtype=self.dtype, endpoint=True)
        low = self.low.astype(np.float64)
        high = self.high.astype(np.float64)
        out = np.empty(self.shape, dtype=np.float64)
        both = self.bounded_below & self.bounded_above
        only_below = self.bounded_below & ~self.bounded_above
        only_above = ~self.bounded_below & self.bounded_above
        neither = ~self.bounded_below & ~self.bounded_above
        out[both] = rng.uniform(low[both], high[both])
        out[only_below] = low[only_below] + rng.exponential(size=int(only_below.sum()))
        out[only_above] = high[only_above] - rng.exponential(size=int(only_above.sum()))
        out[neither] = rng.normal(size=int(neither.sum()))
        # Casting to a narrower float can round a value just past a bound; clamp it back.
        return np.clip(out.astype(self.dtype), self.low, self.high)

    def contains(self, x: Any) -> bool:
        """An array of this shape whose dtype casts safely to `dtype`, within the bounds (Python
        numbers and lists are converted first, as Gymnasium does)."""
        if not isinstance(x, np.ndarray):
            try:
                x = np.asarray(x, dtype=self.dtype)
            except (ValueError, TypeError, OverflowError):
                return False
        return bool(np.can_cast(x.dtype, self.dtype) and x.shape == self.shape
                    and np.all(x >= self.low) and np.all(x <= self.high))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Box) and self.shape == other.shape and self.dtype == other.dtype
                and np.array_equal(self.low, other.low) and np.array_equal(self.high, other.high))

    def __repr__(self) -> str:
        return f"Box({_bounds_repr(self.low)}, {_bounds_repr(self.high)}, {self.shape}, {self.dtype})"


class Discrete(Space):
    """The integers {start, ..., start + n - 1}; an element is a numpy int64 scalar."""

    def __init__(self, n: int, seed: int | np.random.Generator | None = None, start: int = 0):
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n <= 0:
            raise ValueError(f"Discrete n must be a positive integer, got {n!r}")
        if isinstance(start, (bool, np.bool_)) or not isinstance(start, (int, np.integer)):
            raise ValueError(f"Discrete start must be an integer, got {start!r}")
        self.n = np.int64(n)
        self.start = np.int64(start)
        super().__init__((), np.int64, seed)

    def sample(self, mask: np.ndarray | None = None) -> np.int64:
        """A uniform element; with `mask` (int8, shape (n,), 1 = allowed) a uniform allowed one, or
        `start` when none is allowed (as Gymnasium does)."""
        if mask is None:
            return np.int64(self.start + self.np_random.integers(self.n))
        mask = np.asarray(mask)
        if mask.shape != (int(self.n),) or mask.dtype != np.int8:
            raise ValueError(f"Discrete mask must be an int8 array of shape ({int(self.n)},)")
        allowed = np.flatnonzero(mask == 1)
        if allowed.size == 0:
            return np.int64(self.start)
        return np.int64(self.start + self.np_random.choice(allowed))

    def contains(self, x: Any) -> bool:
        """A Python int, or a numpy integer scalar or 0-d integer array, in range."""
        if isinstance(x, int):
            value = np.int64(x)
        elif isinstance(x, (np.generic, np.ndarray)) and np.issubdtype(x.dtype, np.integer) and x.shape == ():
            value = np.int64(x)
        else:
            return False
        return bool(self.start <= value < self.start + self.n)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Discrete) and self.n == other.n and self.start == other.start

    def __repr__(self) -> str:
        if self.start != 0:
            return f"Discrete({int(self.n)}, start={int(self.start)})"
        return f"Discrete({int(self.n)})"


class MultiDiscrete(Space):
    """An array of independent discrete variables: entry i is in {start[i], ..., start[i] + nvec[i] - 1}.

    `nvec` may have any shape; the element shape is `nvec.shape`.
    """

    def __init__(self, nvec: Any, dtype: Any = np.int64, seed: int | np.random.Generator | None = None,
                 start: Any = None):
        dtype = np.dtype(dtype)
        if not _is_integer_dtype(dtype):
            raise ValueError(f"MultiDiscrete dtype must be an integer type, got {dtype}")
        nvec_raw = np.asarray(nvec)
        if nvec_raw.size > 0 and not np.issubdtype(nvec_raw.dtype, np.integer):
            raise ValueError(f"MultiDiscrete nvec must be integers, got {nvec_raw.dtype}")
        self.nvec = np.array(nvec_raw, dtype=dtype)
        if np.any(self.nvec <= 0):
            raise ValueError(f"MultiDiscrete nvec must be positive everywhere, got {self.nvec}")
        if start is None:
            self.start = np.zeros(self.nvec.shape, dtype=dtype)
        else:
            start_raw = np.asarray(start)
            if start_raw.shape != self.nvec.shape:
                raise ValueError(f"MultiDiscrete start has shape {start_raw.shape}, expected {self.nvec.shape}")
            self.start = np.array(start_raw, dtype=dtype)
        super().__init__(self.nvec.shape, dtype, seed)

    def sample(self) -> np.ndarray:
        return (self.start + self.np_random.integers(np.zeros_like(self.nvec), self.nvec)).astype(self.dtype)

    def contains(self, x: Any) -> bool:
        """An integer array (or nested list) of `nvec`'s shape with start <= x < start + nvec."""
        if isinstance(x, (list, tuple)):
            x = np.array(x)
        if not isinstance(x, np.ndarray) or x.shape != self.shape:
            return False
        if not (np.issubdtype(x.dtype, np.integer) or (x.size == 0 and x.dtype != object)):
            return False
        offset = x.astype(np.int64) - self.start.astype(np.int64)
        return bool(np.all(offset >= 0) and np.all(offset < self.nvec))

    def __getitem__(self, index: Any) -> Space:
        """The sub-space at `index`: a Discrete for a single entry, else a MultiDiscrete."""
        nvec = self.nvec[index]
        start = self.start[index]
        if nvec.ndim == 0:
            return Discrete(int(nvec), start=int(start))
        return MultiDiscrete(nvec, dtype=self.dtype, start=start)

    def __len__(self) -> int:
        if self.nvec.ndim == 0:
            raise TypeError("len() of a 0-d MultiDiscrete")
        return int(self.nvec.shape[0])

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, MultiDiscrete) and self.dtype == other.dtype
                and self.nvec.shape == other.nvec.shape and np.array_equal(self.nvec, other.nvec)
                and np.array_equal(self.start, other.start))

    def __repr__(self) -> str:
        if np.any(self.start != 0):
            return f"MultiDiscrete({self.nvec}, start={self.start})"
        return f"MultiDiscrete({self.nvec})"


def _check_subspace(space: Any, where: str) -> None:
    if not isinstance(space, Space):
        raise TypeError(f"{where} must be a coral space, got {type(space).__name__}")


class Dict(Space, Mapping):
    """A dictionary of named sub-spaces; an element is a dict with exactly those keys, in the
    space's (insertion) order."""

    def __init__(self, spaces: Mapping[str, Space] | Sequence[tuple[str, Space]] | None = None,
                 seed: int | Mapping[str, Any] | np.random.Generator | None = None, **spaces_kwargs: Space):
        if spaces is None:
            spaces = {}
        if isinstance(spaces, Mapping):
            items = list(spaces.items())
        else:
            items = list(spaces)
        if items and spaces_kwargs:
            raise ValueError("Dict takes its spaces either as a mapping or as keyword arguments, not both")
        items += list(spaces_kwargs.items())
        self.spaces: dict[str, Space] = {}
        for key, space in items:
            _check_subspace(space, f"Dict entry {key!r}")
            self.spaces[key] = space
        super().__init__(None, None, seed if isinstance(seed, np.random.Generator) else None)
        if seed is not None and not isinstance(seed, np.random.Generator):
            self.seed(seed)

    def seed(self, seed: int | Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Seed this space and every sub-space. An int seeds this space and, from its generator, a
        derived seed for each sub-space; a dict gives each key its own seed; None reseeds all from
        entropy. Returns the seed each sub-space used, by key."""
        if isinstance(seed, Mapping):
            if set(seed.keys()) != set(self.spaces.keys()):
                raise ValueError(f"Dict seed keys {sorted(seed)} differ from the space's keys {sorted(self.spaces)}")
            super().seed(None)
            return {key: space.seed(seed[key]) for key, space in self.spaces.items()}
        if seed is None:
            super().seed(None)
            return {key: space.seed(None) for key, space in self.spaces.items()}
        super().seed(seed)
        sub_seeds = self._np_random.integers(np.iinfo(np.int32).max, size=len(self.spaces))
        return {key: space.seed(int(s)) for (key, space), s in zip(self.spaces.items(), sub_seeds)}

    def sample(self) -> dict[str, Any]:
        return {key: space.sample() for key, space in self.spaces.items()}

    def contains(self, x: Any) -> bool:
        return (isinstance(x, dict) and x.keys() == self.spaces.keys()
                and all(space.contains(x[key]) for key, space in self.spaces.items()))

    def __getitem__(self, key: str) -> Space:
        return self.spaces[key]

    def __iter__(self):
        return iter(self.spaces)

    def __len__(self) -> int:
        return len(self.spaces)

    def keys(self):
        return self.spaces.keys()

    def items(self):
        return self.spaces.items()

    def values(self):
        return self.spaces.values()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dict) and self.spaces == other.spaces

    def __repr__(self) -> str:
        return "Dict(" + ", ".join(f"{key!r}: {space}" for key, space in self.spaces.items()) + ")"


class Tuple(Space):
    """A fixed-length tuple of sub-spaces; an element is a tuple of their elements."""

    def __init__(self, spaces: Iterable[Space], seed: int | Sequence[Any] | np.random.Generator | None = None):
        self.spaces: tuple[Space, ...] = tuple(spaces)
        for i, space in enumerate(self.spaces):
            _check_subspace(space, f"Tuple entry {i}")
        super().__init__(None, None, seed if isinstance(seed, np.random.Generator) else None)
        if seed is not None and not isinstance(seed, np.random.Generator):
            self.seed(seed)

    def seed(self, seed: int | Sequence[Any] | None = None) -> tuple[Any, ...]:
        """As `Dict.seed`, with a list or tuple of per-entry seeds in place of a dict."""
        if isinstance(seed, (list, tuple)):
            if len(seed) != len(self.spaces):
                raise ValueError(f"Tuple seed has {len(seed)} entries, the space has {len(self.spaces)}")
            super().seed(None)
            return tuple(space.seed(s) for space, s in zip(self.spaces, seed))
        if seed is None:
            super().seed(None)
            return tuple(space.seed(None) for space in self.spaces)
        super().seed(seed)
        sub_seeds = self._np_random.integers(np.iinfo(np.int32).max, size=len(self.spaces))
        return tuple(space.seed(int(s)) for space, s in zip(self.spaces, sub_seeds))

    def sample(self) -> tuple[Any, ...]:
        return tuple(space.sample() for space in self.spaces)

    def contains(self, x: Any) -> bool:
        """A tuple (or list) of the right length whose entries are each contained."""
        if isinstance(x, list):
            x = tuple(x)
        return (isinstance(x, tuple) and len(x) == len(self.spaces)
                and all(space.contains(part) for space, part in zip(self.spaces, x)))

    def __getitem__(self, index: int) -> Space:
        return self.spaces[index]

    def __len__(self) -> int:
        return len(self.spaces)

    def __iter__(self):
        return iter(self.spaces)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tuple) and self.spaces == other.spaces

    def __repr__(self) -> str:
        return "Tuple(" + ", ".join(str(space) for space in self.spaces) + ")"


def batch_space(space: Space, n: int = 1) -> Space:
    """The space of `n` stacked elements of `space`, as `gymnasium.vector.utils.batch_space` makes it:
    Box -> Box of shape (n, *shape); Discrete(k) -> MultiDiscrete([k] * n); MultiDiscrete(nvec) ->
    MultiDiscrete of shape (n, *nvec.shape); Dict and Tuple -> the same container of batched children.

    The batched space starts from a copy of `space`'s generator when it has one (an unseeded space
    is left unseeded: seeding it here would reseed a Dict's or Tuple's children).
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n <= 0:
        raise ValueError(f"batch_space n must be a positive integer, got {n!r}")
    n = int(n)
    rng = copy.deepcopy(space._np_random) if isinstance(space, Space) else None
    if isinstance(space, Box):
        reps = (n,) + (1,) * space.low.ndim
        return Box(np.tile(space.low, reps), np.tile(space.high, reps), dtype=space.dtype, seed=rng)
    if isinstance(space, Discrete):
        # A nonzero start carries over entrywise (MultiDiscrete's start), as in Gymnasium 1.x;
        # coral's own discrete spaces all start at 0.
        start = np.full((n,), space.start, dtype=space.dtype) if space.start != 0 else None
        return MultiDiscrete(np.full((n,), space.n, dtype=space.dtype), dtype=space.dtype, seed=rng, start=start)
    if isinstance(space, MultiDiscrete):
        reps = (n,) + (1,) * space.nvec.ndim
        return MultiDiscrete(np.tile(space.nvec, reps), dtype=space.dtype, seed=rng,
                             start=np.tile(space.start, reps))
    if isinstance(space, Dict):
        return Dict({key: batch_space(sub, n) for key, sub in space.items()}, seed=rng)
    if isinstance(space, Tuple):
        return Tuple(tuple(batch_space(sub, n) for sub in space.spaces), seed=rng)
    raise TypeError(f"batch_space supports Box, Discrete, MultiDiscrete, Dict and Tuple, got {type(space).__name__}")
