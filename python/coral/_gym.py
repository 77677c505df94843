"""What coral takes from Gymnasium when it is importable, and its own stand-ins otherwise.

The one place that tries ``import gymnasium``: the space classes, batch_space,
the VectorEnv base class and the AutoresetMode enum come from Gymnasium when
it is there (so that coral's vector env passes every ``isinstance`` check of
Gymnasium's wrappers), and from coral otherwise (numpy only).
"""

import enum

import numpy as np

try:  # pragma: no cover - depends on the machine
    import gymnasium.spaces as spaces
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space

    USING_GYMNASIUM = True
except ImportError:
    from . import spaces
    from .spaces import batch_space

    USING_GYMNASIUM = False

    class AutoresetMode(enum.Enum):
        """When a vector env starts an env's next episode: in the step after the one
        that ended it (NEXT_STEP), or in that same step (SAME_STEP)."""

        NEXT_STEP = "NextStep"
        SAME_STEP = "SameStep"
        DISABLED = "Disabled"

    class VectorEnv:
        """The base coral's vector env has without Gymnasium: the attributes and the
        close/np_random protocol of ``gymnasium.vector.VectorEnv``."""

        metadata = {}
        spec = None
        render_mode = None
        closed = False
        _np_random = None
        _np_random_seed = None

        def reset(self, *, seed=None, options=None):
            """Seeds np_random when `seed` is given (subclasses reset the envs)."""
            if seed is not None:
                self._np_random, self._np_random_seed = _seeded_generator(seed)

        def close(self, **kwargs):
            """close_extras(), once; later calls do nothing."""
            if self.closed:
                return
            self.close_extras(**kwargs)
            self.closed = True

        def close_extras(self, **kwargs):
            """What close() releases beyond this base class."""

        @property
        def np_random(self):
            """A generator for the vector env's own use, seeded by reset(seed=...) (from entropy before)."""
            if self._np_random is None:
                self._np_random, self._np_random_seed = _seeded_generator(None)
            return self._np_random

        @np_random.setter
        def np_random(self, value):
            self._np_random = value
            self._np_random_seed = -1  # a generator set directly has no known seed

        @property
        def np_random_seed(self):
            """The seed np_random was made from (-1 when it was set directly)."""
            if self._np_random_seed is None:
                self._np_random, self._np_random_seed = _seeded_generator(None)
            return self._np_random_seed

        @property
        def unwrapped(self):
            return self

        def __del__(self):
            if not getattr(self, "closed", True):
                self.close()

    def _seeded_generator(seed):
        if seed is None:
            seed = int(np.random.SeedSequence().entropy)
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed))), seed


__all__ = ["USING_GYMNASIUM", "AutoresetMode", "VectorEnv", "batch_space", "spaces"]
