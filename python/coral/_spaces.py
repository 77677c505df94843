"""Between coral's space descriptions and space objects.

coral describes a space as a plain tuple (see python/src/spaces.hpp); this
module builds Gymnasium's space objects from it when ``gymnasium`` is
importable, and coral's own (``coral.spaces``) otherwise, and reads either
kind back into a description (for envs registered from Python). It also
holds the flat layouts: how an observation is cut out of a flat row, and how
an action is written into one.
"""

import numpy as np

from ._gym import USING_GYMNASIUM, batch_space as _batch_space, spaces as _impl


def from_desc(desc):
    """The space object a description describes."""
    kind = desc[0]
    if kind == "box":
        shape = tuple(desc[1])
        low = np.asarray(desc[2], dtype=np.float32).reshape(shape)
        high = np.asarray(desc[3], dtype=np.float32).reshape(shape)
        return _impl.Box(low=low, high=high, shape=shape, dtype=np.float32)
    if kind == "discrete":
        return _impl.Discrete(int(desc[1]))
    if kind == "multi_discrete":
        return _impl.MultiDiscrete(np.asarray(desc[1], dtype=np.int64))
    if kind == "dict":
        return _impl.Dict({key: from_desc(child) for key, child in desc[1]})
    if kind == "tuple":
        return _impl.Tuple(tuple(from_desc(child) for child in desc[1]))
    raise ValueError(f"unknown space kind {kind!r}")


def to_desc(space):
    """The description of a space object (Gymnasium's or coral's)."""
    name = type(space).__name__
    if name == "Box":
        shape = tuple(int(n) for n in space.shape)
        low = np.broadcast_to(np.asarray(space.low, dtype=np.float32), shape).ravel()
        high = np.broadcast_to(np.asarray(space.high, dtype=np.float32), shape).ravel()
        return ("box", shape, [float(x) for x in low], [float(x) for x in high])
    if name == "Discrete":
        if int(getattr(space, "start", 0)) != 0:
            raise ValueError(f"{space!r}: coral takes Discrete spaces that start at 0")
        return ("discrete", int(space.n))
    if name == "MultiDiscrete":
        nvec = np.asarray(space.nvec)
        if nvec.ndim != 1:
            raise ValueError(f"{space!r}: coral takes one-dimensional MultiDiscrete spaces")
        return ("multi_discrete", [int(n) for n in nvec])
    if name == "Dict":
        return ("dict", [(str(key), to_desc(child)) for key, child in space.spaces.items()])
    if name == "Tuple":
        return ("tuple", [to_desc(child) for child in space.spaces])
    raise ValueError(f"{space!r}: coral takes Box, Discrete, MultiDiscrete, Dict and Tuple spaces")


def batch(space, n):
    """The space of n stacked values of `space` (Gymnasium's batch_space)."""
    return _batch_space(space, n)


def _leaves(desc, offset=0):
    """(path, kind, offset, size, shape) of every leaf of an observation row, in order."""
    kind = desc[0]
    if kind == "box":
        shape = tuple(desc[1])
        size = int(np.prod(shape)) if shape else 1
        return [((), "box", offset, size, shape)], offset + size
    if kind == "discrete":
        return [((), "discrete", offset, 1, ())], offset + 1
    if kind == "multi_discrete":
        size = len(desc[1])
        return [((), "multi_discrete", offset, size, (size,))], offset + size
    out = []
    items = desc[1] if kind == "dict" else list(enumerate(desc[1]))
    for key, child in items:
        leaves, offset = _leaves(child, offset)
        out.extend(((key,) + path, k, o, s, sh) for path, k, o, s, sh in leaves)
    return out, offset


class ObservationLayout:
    """Cuts structured observations out of flat rows (views where it can)."""

    def __init__(self, desc):
        self.desc = desc
        self.leaves, self.width = _leaves(desc)
        self.simple_box = desc[0] == "box"
        # Box leaves are views of the rows; Discrete ones are converted to
        # integers, a new array each time.
        self.all_views = all(kind == "box" for _, kind, _, _, _ in self.leaves)

    def view(self, rows):
        """The observations of `rows` (a (n, width) float32 array): a view for Box
        leaves, int64 arrays for Discrete/MultiDiscrete leaves."""
        if self.simple_box:
            return rows.reshape((rows.shape[0],) + tuple(self.desc[1]))
        return self._build(self.desc, rows, 0)[0]

    def _build(self, desc, rows, offset):
        kind = desc[0]
        if kind == "box":
            shape = tuple(desc[1])
            size = int(np.prod(shape)) if shape else 1
            return rows[:, offset:offset + size].reshape((rows.shape[0],) + shape), offset + size
        if kind == "discrete":
            return rows[:, offset].astype(np.int64), offset + 1
        if kind == "multi_discrete":
            size = len(desc[1])
            return rows[:, offset:offset + size].astype(np.int64), offset + size
        if kind == "dict":
            out = {}
            for key, child in desc[1]:
                out[key], offset = self._build(child, rows, offset)
            return out, offset
        items = []
        for child in desc[1]:
            value, offset = self._build(child, rows, offset)
            items.append(value)
        return tuple(items), offset

    def flatten_one(self, obs):
        """One structured observation as a flat float32 row."""
        if self.simple_box:
            return np.asarray(obs, dtype=np.float32).reshape(-1)
        parts = []
        self._flatten(self.desc, obs, parts)
        return np.concatenate(parts).astype(np.float32, copy=False)

    def _flatten(self, desc, value, parts):
        kind = desc[0]
        if kind in ("box", "discrete", "multi_discrete"):
            parts.append(np.asarray(value, dtype=np.float32).reshape(-1))
        elif kind == "dict":
            for key, child in desc[1]:
                self._flatten(child, value[key], parts)
        else:
            for child, item in zip(desc[1], value):
                self._flatten(child, item, parts)


class ActionLayout:
    """Writes structured actions into the two parts of flat action rows, and back."""

    def __init__(self, desc):
        self.desc = desc
        self.kind = desc[0]

    def flatten_batch(self, actions, n):
        """(discrete (n, D) int32 or None, continuous (n, C) float32 or None) of n actions."""
        discrete, continuous = [], []
        self._split(self.desc, actions, n, discrete, continuous)
        # Integers keep their width: the extension checks each before narrowing it.
        d = np.concatenate(discrete, axis=1) if discrete else None
        c = np.concatenate(continuous, axis=1).astype(np.float32, copy=False) if continuous else None
        return d, c

    def _split(self, desc, value, n, discrete, continuous):
        kind = desc[0]
        if kind == "box":
            continuous.append(np.asarray(value, dtype=np.float32).reshape(n, -1))
        elif kind in ("discrete", "multi_discrete"):
            discrete.append(np.asarray(value).reshape(n, -1))
        elif kind == "dict":
            if not isinstance(value, dict):
                raise ValueError(f"actions: expected a dict of arrays with keys {[k for k, _ in desc[1]]}")
            for key, child in desc[1]:
                if key not in value:
                    raise ValueError(f"actions: missing key {key!r}")
                self._split(child, value[key], n, discrete, continuous)
        else:
            if len(value) != len(desc[1]):
                raise ValueError(f"actions: expected a tuple of {len(desc[1])} arrays")
            for child, item in zip(desc[1], value):
                self._split(child, item, n, discrete, continuous)

    def unflatten_one(self, discrete, continuous):
        """One structured action from the two parts of its flat row."""
        return self._join(self.desc, discrete, continuous, [0, 0])

    def _join(self, desc, discrete, continuous, at):
        kind = desc[0]
        if kind == "box":
            shape = tuple(desc[1])
            size = int(np.prod(shape)) if shape else 1
            value = np.array(continuous[at[1]:at[1] + size], dtype=np.float32).reshape(shape)
            at[1] += size
            return value
        if kind == "discrete":
            value = int(discrete[at[0]])
            at[0] += 1
            return value
        if kind == "multi_discrete":
            size = len(desc[1])
            value = np.array(discrete[at[0]:at[0] + size], dtype=np.int64)
            at[0] += size
            return value
        if kind == "dict":
            return {key: self._join(child, discrete, continuous, at) for key, child in desc[1]}
        return tuple(self._join(child, discrete, continuous, at) for child in desc[1])
