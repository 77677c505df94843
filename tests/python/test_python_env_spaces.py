"""A Python env's spaces survive coral: dtypes, starts and shapes, in both directions."""

import itertools

import numpy as np
import pytest

import coral

spaces = coral._spaces._impl
_names = itertools.count()


def check_dtypes(space, value):
    """Asserts that `value` has the dtypes of `space`'s elements, leaf by leaf."""
    name = type(space).__name__
    if name == "Dict":
        assert isinstance(value, dict) and list(value) == list(space.spaces)
        for key, sub in space.spaces.items():
            check_dtypes(sub, value[key])
    elif name == "Tuple":
        assert isinstance(value, tuple) and len(value) == len(space.spaces)
        for sub, part in zip(space.spaces, value):
            check_dtypes(sub, part)
    elif name == "Discrete":
        assert isinstance(value, (int, np.integer)), type(value)
    else:
        assert np.asarray(value).dtype == space.dtype, (np.asarray(value).dtype, space)


def mirror_env(space):
    class Mirror:
        """observes the action it was given (and a sample of its space on reset)"""

        def __init__(self):
            self.observation_space = space
            self.action_space = space

        def reset(self, seed=None, options=None):
            if seed is not None:
                self.observation_space.seed(seed)
            return self.observation_space.sample(), {}

        def step(self, action):
            check_dtypes(self.action_space, action)
            assert self.action_space.contains(action), action
            return action, 0.0, False, False, {}

    name = f"mirror-{next(_names)}"
    coral.register(name, Mirror)
    return name


def equal(a, b):
    if isinstance(a, dict):
        return list(a) == list(b) and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == np.float64:  # float64 values travel in coral's float32 rows
        return b.dtype == np.float64 and np.allclose(a, b, rtol=1e-7, atol=0)
    return a.dtype == b.dtype and np.array_equal(a, b)


SPACES = [
    spaces.Box(low=0, high=255, shape=(2, 3), dtype=np.uint8),
    spaces.Box(low=0, high=1, shape=(3,), dtype=np.bool_),
    spaces.Box(low=-1000, high=1000, shape=(2,), dtype=np.int32),
    spaces.Box(low=-1.0, high=1.0, shape=(2,), dtype=np.float64),
    spaces.Discrete(3, start=-1),
    spaces.MultiDiscrete([2, 3], start=[10, -5]),
    spaces.MultiDiscrete([2, 3], dtype=np.int8),
    spaces.MultiDiscrete([4, 5], dtype=np.uint16),
    spaces.MultiDiscrete([[2, 3], [3, 2]], start=[[10, 20], [30, 40]]),
    spaces.Dict({"pixels": spaces.Box(0, 255, (2,), np.uint8), "goal": spaces.MultiDiscrete([3, 3], start=[1, 1])}),
    spaces.Tuple((spaces.Discrete(4, start=2), spaces.Box(-1, 1, (2,), np.float32))),
]


@pytest.mark.parametrize("space", SPACES, ids=[repr(s) for s in SPACES])
def test_observations_and_actions_keep_the_env_spaces_dtypes_starts_and_shapes(space):
    with coral.make_vec(mirror_env(space), 3) as env:
        assert env.single_observation_space == space and env.single_action_space == space
        obs, _ = env.reset(seed=1)
        assert env.observation_space.contains(obs)
        env.action_space.seed(2)
        for _ in range(5):
            actions = env.action_space.sample()
            obs, _, _, _, _ = env.step(actions)
            assert equal(obs, actions)  # the env saw each action in its dtype (it asserts so) and echoed it
            assert env.observation_space.contains(obs)


@pytest.mark.parametrize("space, wrong, allowed", [
    (spaces.MultiDiscrete([2, 2], start=[10, 10]), np.zeros((3, 2), dtype=np.int64), r"allowed 10\.\.11"),
    (spaces.Discrete(3, start=-1), np.array([-1, 2, 0]), r"action 2 is outside .*allowed -1\.\.1"),
])
def test_actions_outside_a_started_space_are_refused_naming_its_range(space, wrong, allowed):
    with coral.make_vec(mirror_env(space), 3) as env:
        env.reset(seed=0)
        with pytest.raises(ValueError, match=allowed):
            env.step(wrong)
        env.step(env.action_space.sample())  # still usable


class Ending:
    """structured observations; every episode ends after two steps"""

    def __init__(self, tuple_obs=False):
        box = spaces.Box(-10, 10, (2,), np.float32)
        if tuple_obs:
            self.observation_space = spaces.Tuple((box, spaces.Discrete(5)))
        else:
            self.observation_space = spaces.Dict({"pos": box, "count": spaces.Discrete(5)})
        self.action_space = spaces.Discrete(2)
        self.tuple_obs = tuple_obs
        self.t = 0

    def reset(self, seed=None, options=None):
        self.t = 0
        return self.obs(), {}

    def step(self, action):
        self.t += 1
        return self.obs(), 1.0, False, self.t >= 2, {}

    def obs(self):
        pos = np.full(2, self.t, dtype=np.float32)
        return (pos, self.t) if self.tuple_obs else {"pos": pos, "count": self.t}


@pytest.mark.parametrize("tuple_obs", [False, True], ids=["Dict", "Tuple"])
def test_same_step_final_obs_of_structured_spaces_has_one_entry_per_env(tuple_obs):
    name = f"ending-{next(_names)}"
    coral.register(name, Ending, tuple_obs=tuple_obs)
    for copy in (False, True):
        with coral.make_vec(name, 3, autoreset_mode="same_step", copy=copy) as env:
            env.reset(seed=0)
            _, _, _, _, infos = env.step(np.zeros(3, dtype=np.int64))
            assert not infos["_final_obs"].any()
            _, _, _, truncations, infos = env.step(np.zeros(3, dtype=np.int64))
            assert truncations.all() and infos["_final_obs"].all()
            final = infos["final_obs"]
            assert final.shape == (3,) and final.dtype == object
            for i in range(3):
                assert env.single_observation_space.contains(final[i])
                pos, count = (final[i] if tuple_obs else (final[i]["pos"], final[i]["count"]))
                assert list(pos) == [2.0, 2.0] and count == 2
