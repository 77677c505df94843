"""coral.register: Python envs inside coral, on every topology and in coral.train."""

import numpy as np
import pytest

import coral

spaces = coral._spaces._impl


class Counter:
    """counts its own steps; observation [steps in total, steps this episode, last action]"""

    def __init__(self, length=4, scale=1.0):
        self.length = length
        self.scale = scale
        self.observation_space = spaces.Box(low=-1e9, high=1e9, shape=(3,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.total = 0
        self.t = 0
        self.seeds = []

    def reset(self, seed=None, options=None):
        self.seeds.append(seed)
        self.t = 0
        return np.array([self.total, 0, -1], dtype=np.float32), {}

    def step(self, action):
        assert action in (0, 1, 2)
        self.total += 1
        self.t += 1
        obs = np.array([self.total, self.t, action], dtype=np.float32)
        return obs, self.scale, self.t >= self.length, False, {}


class Structured:
    """Dict observation, Tuple action"""

    def __init__(self):
        self.observation_space = spaces.Dict({
            "pos": spaces.Box(low=-10, high=10, shape=(2,), dtype=np.float32),
            "mode": spaces.Discrete(3),
        })
        self.action_space = spaces.Tuple((spaces.Discrete(4), spaces.Box(low=-1, high=1, shape=(2,),
                                                                         dtype=np.float32)))
        self.pos = np.zeros(2, dtype=np.float32)
        self.t = 0

    def reset(self, seed=None, options=None):
        self.pos[:] = 0
        self.t = 0
        return {"pos": self.pos.copy(), "mode": 0}, {}

    def step(self, action):
        k, push = action
        self.pos += push
        self.t += 1
        return {"pos": self.pos.copy(), "mode": int(k) % 3}, float(k), False, self.t >= 5, {}


class Broken:
    """raises on its third step"""

    def __init__(self):
        self.observation_space = spaces.Box(low=-1, high=1, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.t = 0

    def reset(self, seed=None, options=None):
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t == 3:
            raise ArithmeticError("the env broke")
        return np.zeros(1, dtype=np.float32), 0.0, False, False, {}


class Noisy:
    """its first observation is drawn from the seed of its first reset"""

    def __init__(self):
        self.observation_space = spaces.Box(low=0, high=1, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.rng = np.random.default_rng()

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        return self.rng.random(2).astype(np.float32), {}

    def step(self, action):
        return self.rng.random(2).astype(np.float32), 0.0, False, False, {}


coral.register("py-counter", Counter, length=4, scale=1.0)
coral.register("py-noisy", Noisy)
coral.register("py-structured", Structured)
coral.register("py-broken", Broken)


def test_a_registered_env_is_listed_and_takes_its_settings():
    assert "py-counter" in coral.env_names()
    with coral.make_vec("py-counter", 2, length=2, scale=0.5) as env:
        env.reset()
        obs, rew, term, *_ = env.step(np.array([1, 2]))
        assert list(rew) == [0.5, 0.5]
        obs, rew, term, *_ = env.step(np.array([1, 2]))
        assert term.all()
    with pytest.raises(ValueError, match="lenght"):
        coral.make_vec("py-counter", 2, lenght=3)
    with pytest.raises(ValueError, match="already|taken|exists"):
        coral.register("py-counter", Counter)
    with pytest.raises(ValueError, match="int, float or bool"):
        coral.register("py-bad-default", Counter, length="four")


@pytest.mark.parametrize("topology", ["sync", "double-buffer", "pool"])
def test_a_python_env_runs_on_every_topology(topology):
    with coral.make_vec("py-counter", 4, topology=topology, num_threads=2, envs_per_group=1,
                        autoreset_mode="same_step") as env:
        env.async_reset()
        sent = np.zeros(4, dtype=np.int64)
        for r in range(100):
            obs, rew, term, trunc, infos = env.recv()
            ids = infos["env_id"]
            # obs[0] counts every step the env took: exactly the actions it was sent
            np.testing.assert_array_equal(obs[:, 0], sent[ids])
            actions = (ids + r) % 3
            env.send(actions, ids)
            sent[ids] += 1


def test_structured_spaces_are_unflattened_to_dicts_and_tuples():
    with coral.make_vec("py-structured", 3) as env:
        assert type(env.single_observation_space).__name__ == "Dict"
        obs, _ = env.reset()
        assert set(obs) == {"pos", "mode"}
        assert obs["pos"].shape == (3, 2) and obs["mode"].shape == (3,)
        assert obs["mode"].dtype == np.int64
        actions = (np.array([1, 2, 3]), np.array([[0.5, -0.5], [0.25, 0.0], [1.0, 1.0]], dtype=np.float32))
        obs, rew, term, trunc, _ = env.step(actions)
        np.testing.assert_allclose(obs["pos"], actions[1])
        assert list(obs["mode"]) == [1, 2, 0]
        assert list(rew) == [1.0, 2.0, 3.0]
        assert env.observation_space.contains(obs)
        with pytest.raises(ValueError, match="outside"):
            env.step((np.array([1, 9, 3]), actions[1]))


def test_a_python_env_that_raises_is_an_env_error_naming_the_env_and_the_exception():
    env = coral.make_vec("py-broken", 2)
    env.reset()
    with pytest.raises(coral.EnvError, match="ArithmeticError: the env broke") as info:
        for _ in range(5):
            env.step(np.zeros(2, dtype=np.int64))
    assert info.value.env_id in (0, 1)
    env.close()


def test_python_envs_are_seeded_per_env_and_repeat_for_a_seed():
    def first_obs(seed):
        with coral.make_vec("py-noisy", 3, seed=seed) as env:
            return env.reset()[0].copy()
    a = first_obs(1)
    np.testing.assert_array_equal(a, first_obs(1))
    assert not np.array_equal(a, first_obs(2))
    assert len({tuple(row) for row in a}) == 3  # each env its own seed


class Seeded(Counter):
    """keeps the seed of its last seeded reset as np_random_seed, as a Gymnasium env does"""

    np_random_seed = -1

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.np_random_seed = seed
        return super().reset(seed=seed, options=options)


coral.register("py-seeded", Seeded)


def test_a_vector_env_seeds_env_i_with_seed_plus_i_and_shows_their_seeds():
    with coral.make_vec("py-seeded", 3, seed=40) as env:
        env.reset()
        assert env.np_random_seed == (40, 41, 42)
        env.reset(seed=7)
        assert env.np_random_seed == (7, 8, 9)
        env.step(np.zeros(3, dtype=np.int64))
        env.reset()  # a plain reset goes on from each env's generator
        assert env.np_random_seed == (7, 8, 9)
        assert env.get_attr("seeds") == ([7, None], [8, None], [9, None])


def test_make_vec_with_seed_none_seeds_no_env_until_a_seeded_reset():
    with coral.make_vec("py-seeded", 2, seed=None) as env:
        env.reset()
        assert env.get_attr("seeds") == ([None], [None])
        assert env.np_random_seed == (-1, -1)
        env.reset(seed=3)
        assert env.np_random_seed == (3, 4)
    with coral.make_vec("cartpole", 2, seed=None) as a, coral.make_vec("cartpole", 2, seed=None) as b:
        assert not np.array_equal(a.reset()[0], b.reset()[0])  # a C++ env: a seed from entropy


def test_coral_train_runs_a_python_env(tmp_path):
    result = coral.train(env="py-counter", algo="ppo", total_steps=2000, no_run_dir=True, verbose=False,
                         topology="sync", num_envs=4)
    assert result["env"] == "py-counter"
    assert result["env_steps"] == 2000


def test_a_list_of_seeds_or_a_seed_with_a_partial_mask_seeds_python_envs_in_place():
    with coral.make_vec("py-seeded", 3, seed=None, autoreset_mode="disabled") as env:
        env.reset(seed=[5, None, 9])
        assert env.get_attr("seeds") == ([5], [None], [9])
        env.reset(seed=20, options={"reset_mask": np.array([False, True, False])})
        assert env.get_attr("seeds") == ([5], [None, 21], [9])
        assert env.np_random_seed == (5, 21, 9)
        with pytest.raises(ValueError, match=r"^seed: 2 seeds for 3 envs"):
            env.reset(seed=[1, 2])
    with coral.make_vec("cartpole", 2) as env:
        env.reset()
        with pytest.raises(ValueError, match=r"^seed: a list of seeds, .* Python envs only"):
            env.reset(seed=[1, 2])


class Discrete5:
    """a Discrete observation: its step count, ending after 2 steps"""

    def __init__(self):
        self.observation_space = spaces.Discrete(5)
        self.action_space = spaces.Discrete(2)
        self.t = 0

    def reset(self, seed=None, options=None):
        self.t = 0
        return 0, {}

    def step(self, action):
        self.t += 1
        return self.t, 0.0, self.t == 2, False, {}


coral.register("py-discrete5", Discrete5)


def test_same_step_final_observations_of_a_discrete_space_are_python_ints_one_per_env():
    with coral.make_vec("py-discrete5", 2, autoreset_mode="same_step") as env:
        env.reset()
        env.step(np.zeros(2, dtype=np.int64))
        obs, *_, infos = env.step(np.zeros(2, dtype=np.int64))
        assert list(obs) == [0, 0]
        assert infos["final_obs"].dtype == object and list(infos["final_obs"]) == [2, 2]
        assert all(type(x) is int for x in infos["final_obs"])


def test_a_single_action_where_a_batch_belongs_is_a_type_error():
    with coral.make_vec("py-discrete5", 2) as env:
        env.reset()
        with pytest.raises(TypeError, match=r"^actions: expected 2 actions of Discrete\(2\), one per env; got a"):
            env.step(0)


def test_envs_lists_a_python_envs_instances_and_a_cpp_env_has_none():
    with coral.make_vec("py-seeded", 2, seed=4) as env:
        env.reset()
        assert [type(e) for e in env.envs] == [Seeded, Seeded]
        assert [e.np_random_seed for e in env.envs] == [4, 5]
    with coral.make_vec("cartpole", 2) as env:
        with pytest.raises(AttributeError, match=r"^envs: 'cartpole' is a C\+\+ env"):
            env.envs
        assert not hasattr(env, "envs")
