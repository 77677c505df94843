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


# A description's trailing fields carry what coral's C++ spaces do not hold
# and the Python side keeps: a Box's dtype; a Discrete's start and dtype; a
# MultiDiscrete's start, dtype and shape (its nvec is flat). The C++ side
# reads only the leading fields; descriptions it makes have no trailing ones,
# and the defaults below fill them in.


def box_dtype(desc):
    return np.dtype(desc[4]) if len(desc) > 4 else np.dtype(np.float32)


def discrete_start_dtype(desc):
    """A Discrete's (start, dtype)."""
    if len(desc) > 2:
        return int(desc[2]), np.dtype(desc[3])
    return 0, np.dtype(np.int64)


def multi_discrete_parts(desc):
    """A MultiDiscrete's (nvec, start, dtype, shape), nvec and start flat int64 arrays."""
    nvec = np.asarray(desc[1], dtype=np.int64)
    if len(desc) > 2:
        return nvec, np.asarray(desc[2], dtype=np.int64), np.dtype(desc[3]), tuple(desc[4])
    return nvec, np.zeros_like(nvec), np.dtype(np.int64), (len(nvec),)


def from_desc(desc):
    """The space object a description describes."""
    kind = desc[0]
    if kind == "box":
        shape = tuple(desc[1])
        low = np.asarray(desc[2], dtype=np.float32).reshape(shape)
        high = np.asarray(desc[3], dtype=np.float32).reshape(shape)
        return _impl.Box(low=low, high=high, shape=shape, dtype=box_dtype(desc))
    if kind == "discrete":
        start, _ = discrete_start_dtype(desc)
        return _impl.Discrete(int(desc[1]), start=start)
    if kind == "multi_discrete":
        nvec, start, dtype, shape = multi_discrete_parts(desc)
        return _impl.MultiDiscrete(nvec.reshape(shape), dtype=dtype, start=start.reshape(shape))
    if kind == "dict":
        return _impl.Dict({key: from_desc(child) for key, child in desc[1]})
    if kind == "tuple":
        return _impl.Tuple(tuple(from_desc(child) for child in desc[1]))
    raise ValueError(f"unknown space kind {kind!r}")


def _integers(values, space, what):
    values = np.asarray(values)
    if values.size and not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"{space!r}: its {what} must be integers")
    if values.size and (values.min() < -2**31 or values.max() > 2**31 - 1):
        raise ValueError(f"{space!r}: its {what} must fit in 32 bits")
    return [int(x) for x in values.ravel()]


def to_desc(space):
    """The description of a space object (Gymnasium's or coral's)."""
    name = type(space).__name__
    if name == "Box":
        shape = tuple(int(n) for n in space.shape)
        low = np.broadcast_to(np.asarray(space.low, dtype=np.float32), shape).ravel()
        high = np.broadcast_to(np.asarray(space.high, dtype=np.float32), shape).ravel()
        return ("box", shape, [float(x) for x in low], [float(x) for x in high], np.dtype(space.dtype).str)
    if name == "Discrete":
        return ("discrete", _integers(space.n, space, "n")[0], _integers(getattr(space, "start", 0), space, "start")[0],
                np.dtype(getattr(space, "dtype", np.int64)).str)
    if name == "MultiDiscrete":
        nvec = np.asarray(space.nvec)
        start = np.broadcast_to(np.asarray(getattr(space, "start", 0)), nvec.shape)
        return ("multi_discrete", _integers(nvec, space, "nvec"), _integers(start, space, "start"),
                np.dtype(space.dtype).str, tuple(int(n) for n in nvec.shape))
    if name == "MultiBinary":
        shape = tuple(int(n) for n in space.shape)
        size = int(np.prod(shape))
        return ("multi_discrete", [2] * size, [0] * size, np.dtype(space.dtype).str, shape)
    if name == "Dict":
        return ("dict", [(str(key), to_desc(child)) for key, child in space.spaces.items()])
    if name == "Tuple":
        return ("tuple", [to_desc(child) for child in space.spaces])
    raise ValueError(f"{space!r}: coral takes Box, Discrete, MultiDiscrete, MultiBinary, Dict and Tuple spaces")


def _children(desc):
    return [child for _, child in desc[1]] if desc[0] == "dict" else list(desc[1])


def flat_size(desc):
    """Floats in a flat row of the space described (coral's flattening)."""
    kind = desc[0]
    if kind == "box":
        return int(np.prod(desc[1])) if len(desc[1]) else 1
    if kind == "discrete":
        return 1
    if kind == "multi_discrete":
        return len(desc[1])
    return sum(flat_size(child) for child in _children(desc))


def discrete_values(desc):
    """Values of every Discrete/MultiDiscrete component added up: the width of an action-mask row."""
    kind = desc[0]
    if kind == "discrete":
        return int(desc[1])
    if kind == "multi_discrete":
        return int(sum(desc[1]))
    if kind in ("dict", "tuple"):
        return sum(discrete_values(child) for child in _children(desc))
    return 0


def batch(space, n):
    """The space of n stacked values of `space` (Gymnasium's batch_space)."""
    return _batch_space(space, n)


def discrete_starts(desc, out=None):
    """Every Discrete/MultiDiscrete component's start, in the flat action row's order."""
    out = [] if out is None else out
    kind = desc[0]
    if kind == "discrete":
        out.append(discrete_start_dtype(desc)[0])
    elif kind == "multi_discrete":
        out.extend(int(x) for x in multi_discrete_parts(desc)[1])
    elif kind in ("dict", "tuple"):
        for child in (c for _, c in desc[1]) if kind == "dict" else desc[1]:
            discrete_starts(child, out)
    return out


def _cast(values, dtype):
    """Float row values as `dtype` (integers are exact in the rows below 2**24)."""
    if dtype == np.float32:
        return values
    if dtype == np.bool_:
        return values != 0
    if np.issubdtype(dtype, np.integer):
        return np.rint(values).astype(dtype)
    return values.astype(dtype)


class ObservationLayout:
    """Cuts structured observations out of flat rows (views where it can)."""

    def __init__(self, desc):
        self.desc = desc
        self.simple_box = desc[0] == "box" and box_dtype(desc) == np.float32
        self.structured = desc[0] in ("dict", "tuple")
        # float32 Box leaves are views of the rows; the others (Discrete,
        # MultiDiscrete, Boxes of other dtypes) are converted, a new array each time.
        self.all_views = _all_float32_boxes(desc)

    def view(self, rows):
        """The observations of `rows` (a (n, width) float32 array), each leaf in its space's dtype:
        a view for float32 Box leaves, new arrays for the others."""
        if self.simple_box:
            return rows.reshape((rows.shape[0],) + tuple(self.desc[1]))
        return self._build(self.desc, rows, 0)[0]

    def _build(self, desc, rows, offset):
        kind = desc[0]
        n = rows.shape[0]
        if kind == "box":
            shape = tuple(desc[1])
            size = int(np.prod(shape)) if shape else 1
            return _cast(rows[:, offset:offset + size].reshape((n,) + shape), box_dtype(desc)), offset + size
        if kind == "discrete":
            start, dtype = discrete_start_dtype(desc)
            return (np.rint(rows[:, offset]).astype(np.int64) + start).astype(dtype), offset + 1
        if kind == "multi_discrete":
            _, start, dtype, shape = multi_discrete_parts(desc)
            size = len(start)
            values = np.rint(rows[:, offset:offset + size]).astype(np.int64) + start
            return values.reshape((n,) + shape).astype(dtype), offset + size
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
        if kind == "box":
            parts.append(np.asarray(value, dtype=np.float32).reshape(-1))
        elif kind == "discrete":
            parts.append(np.asarray([int(value) - discrete_start_dtype(desc)[0]], dtype=np.float32))
        elif kind == "multi_discrete":
            start = multi_discrete_parts(desc)[1]
            parts.append((np.asarray(value, dtype=np.int64).reshape(-1) - start).astype(np.float32))
        elif kind == "dict":
            for key, child in desc[1]:
                self._flatten(child, value[key], parts)
        else:
            for child, item in zip(desc[1], value):
                self._flatten(child, item, parts)


def _all_float32_boxes(desc):
    kind = desc[0]
    if kind == "box":
        return box_dtype(desc) == np.float32
    if kind in ("discrete", "multi_discrete"):
        return False
    return all(_all_float32_boxes(child) for child in ((c for _, c in desc[1]) if kind == "dict" else desc[1]))


class ActionLayout:
    """Writes structured actions into the two parts of flat action rows, and back.

    The discrete part holds each component less its start (the extension
    subtracts it, knowing discrete_starts()); unflatten_one adds it back.
    """

    def __init__(self, desc):
        self.desc = desc
        self.kind = desc[0]

    def flatten_batch(self, actions, n):
        """(discrete (n, D) integers or None, continuous (n, C) float32 or None) of n actions."""
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
        """One structured action, in its space's dtypes, from the two parts of its flat row."""
        return self._join(self.desc, discrete, continuous, [0, 0])

    def _join(self, desc, discrete, continuous, at):
        kind = desc[0]
        if kind == "box":
            shape = tuple(desc[1])
            size = int(np.prod(shape)) if shape else 1
            value = _cast(np.array(continuous[at[1]:at[1] + size], dtype=np.float32).reshape(shape), box_dtype(desc))
            at[1] += size
            return value
        if kind == "discrete":
            start, dtype = discrete_start_dtype(desc)
            value = dtype.type(int(discrete[at[0]]) + start)
            at[0] += 1
            return value
        if kind == "multi_discrete":
            _, start, dtype, shape = multi_discrete_parts(desc)
            size = len(start)
            value = (np.array(discrete[at[0]:at[0] + size], dtype=np.int64) + start).reshape(shape).astype(dtype)
            at[0] += size
            return value
        if kind == "dict":
            return {key: self._join(child, discrete, continuous, at) for key, child in desc[1]}
        return tuple(self._join(child, discrete, continuous, at) for child in desc[1])
