"""coral.make_vec as a Gymnasium vector env: the protocol its wrappers rely on.

The first tests hold with or without gymnasium installed (coral then brings
its own base class and AutoresetMode); the last ones need gymnasium and skip
without it.
"""

import numpy as np
import pytest

import coral


@pytest.mark.parametrize("given, expected", [
    ("next_step", coral.AutoresetMode.NEXT_STEP), ("same_step", coral.AutoresetMode.SAME_STEP),
    (coral.AutoresetMode.SAME_STEP, coral.AutoresetMode.SAME_STEP),
    ("NextStep", coral.AutoresetMode.NEXT_STEP), ("SameStep", coral.AutoresetMode.SAME_STEP),
    ("disabled", coral.AutoresetMode.DISABLED), ("Disabled", coral.AutoresetMode.DISABLED),
])
def test_metadata_autoreset_mode_is_an_autoreset_mode_member(given, expected):
    with coral.make_vec("cartpole", 2, autoreset_mode=given) as env:
        assert env.metadata["autoreset_mode"] is expected


def test_an_unknown_autoreset_mode_is_refused_naming_the_argument():
    with pytest.raises(ValueError, match=r"^autoreset_mode: 'sometimes' is invalid .*disabled"):
        coral.make_vec("cartpole", 2, autoreset_mode="sometimes")


@pytest.mark.parametrize("copy", [False, True])
def test_disabled_autoreset_leaves_ended_envs_to_a_masked_reset(copy):
    with coral.make_vec("cartpole", 3, max_steps=2, autoreset_mode=coral.AutoresetMode.DISABLED,
                        copy=copy) as env:
        first, _ = env.reset(seed=0)
        first = first.copy()
        actions = np.zeros(3, dtype=np.int64)
        env.step(actions)
        last, _, terminated, truncated, _ = env.step(actions)
        assert (terminated | truncated).all()
        last = last.copy()
        # Nothing reset them: stepping one is refused, naming it, and changes nothing.
        with pytest.raises(RuntimeError, match=r"^vector env: env 0 ended its episode and autoreset is disabled"):
            env.step(actions)
        obs, infos = env.reset(options={"reset_mask": np.array([False, True, False])})
        assert (obs[1] != last[1]).any() and (obs[[0, 2]] == last[[0, 2]]).all()
        assert list(infos["env_id"]) == [0, 1, 2]
        obs, infos = env.reset(options={"reset_mask": np.array([True, False, True])})
        obs, _, terminated, truncated, _ = env.step(actions)
        assert not (terminated | truncated).any()
        # reset() without a mask resets every env, ended or not.
        env.step(actions)
        env.reset()
        env.step(actions)
        _, _, terminated, truncated, _ = env.step(actions)
        assert (terminated | truncated).all()


def test_coral_infos_false_leaves_env_id_and_failed_out():
    with coral.make_vec("cartpole", 2, stats_key=None, coral_infos=False) as env:
        assert env.reset(seed=0)[1] == {}
        assert env.step(np.zeros(2, dtype=np.int64))[4] == {}
    with coral.make_vec("cartpole", 2, stats_key=None, coral_infos=False, autoreset_mode="same_step",
                        max_steps=2) as env:
        env.reset(seed=0)
        assert env.step(np.zeros(2, dtype=np.int64))[4] == {}  # final_obs only when an episode ends
        assert set(env.step(np.zeros(2, dtype=np.int64))[4]) == {"final_obs", "_final_obs", "final_info",
                                                                  "_final_info"}
    with pytest.raises(ValueError, match=r"^coral_infos: False needs batch_size=num_envs"):
        coral.make_vec("cartpole", 4, batch_size=2, coral_infos=False)
    with pytest.raises(ValueError, match=r"^coral_infos: False needs batch_size=num_envs"):
        coral.make_vec("cartpole", 4, topology="pool", coral_infos=False)
    with pytest.raises(ValueError, match=r"^coral_infos: 1 is invalid"):
        coral.make_vec("cartpole", 4, coral_infos=1)


def step_until_an_episode_ends(env):
    env.reset(seed=0)
    for _ in range(50):
        out = env.step(np.zeros(env.num_envs, dtype=np.int64))
        if out[2].any() or out[3].any():
            return out
    raise AssertionError("no episode ended in 50 steps")


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_episode_statistics_leave_gymnasiums_episode_key_free(mode):
    with coral.make_vec("cartpole", 3, max_steps=5, autoreset_mode=mode) as env:
        infos = step_until_an_episode_ends(env)[4]
        assert "episode" not in infos and "_episode" not in infos
        assert list(infos["coral_episode"]["l"][infos["_coral_episode"]]) == [5, 5, 5]
        if mode == "same_step":
            assert "episode" not in infos["final_info"]
            assert list(infos["final_info"]["coral_episode"]["l"]) == [5, 5, 5]


def test_stats_key_renames_or_drops_coral_episode_statistics():
    with coral.make_vec("cartpole", 2, max_steps=5, stats_key="episode") as env:
        infos = step_until_an_episode_ends(env)[4]
        assert list(infos["episode"]["l"]) == [5, 5] and infos["_episode"].all()
    with coral.make_vec("cartpole", 2, max_steps=5, stats_key=None) as env:
        infos = step_until_an_episode_ends(env)[4]
        assert set(infos) == {"env_id", "_env_id", "failed", "_failed"}


@pytest.mark.parametrize("stats_key", ["", "env_id", "_failed", 3])
def test_a_stats_key_that_clashes_is_refused(stats_key):
    with pytest.raises(ValueError, match=r"^stats_key: "):
        coral.make_vec("cartpole", 2, stats_key=stats_key)


def test_close_runs_close_extras_once_and_marks_the_env_closed():
    calls = []

    class Counting(coral.VectorEnv):
        def close_extras(self, **kwargs):
            calls.append(kwargs)
            super().close_extras(**kwargs)

    env = Counting("cartpole", 2)
    env.reset()
    assert env.render() is None and env.render_mode is None
    env.close()
    env.close()
    assert env.closed and calls == [{}]
    with pytest.raises(RuntimeError, match="closed"):
        env.reset()


def test_np_random_is_seeded_by_a_seeded_reset():
    with coral.make_vec("cartpole", 2) as a, coral.make_vec("cartpole", 2) as b:
        a.reset(seed=7)
        b.reset(seed=7)
        assert a.np_random_seed == 7
        assert a.np_random.integers(1 << 30) == b.np_random.integers(1 << 30)
        a.reset()
        assert a.np_random_seed == 7  # a plain reset keeps the generator
    with coral.make_vec("cartpole", 2) as fresh:
        assert isinstance(fresh.np_random, np.random.Generator) and fresh.np_random_seed >= 0
        fresh.np_random = np.random.default_rng(1)
        assert fresh.np_random_seed == -1
    assert coral.make_vec("cartpole", 1).unwrapped is not None


# --- with gymnasium: its wrappers take coral's env --------------------------------------------


def gymnasium_wrappers():
    gym = pytest.importorskip("gymnasium")
    if not coral.USING_GYMNASIUM:  # pragma: no cover - gymnasium installed after coral was imported
        pytest.skip("coral was imported without gymnasium")
    from gymnasium.wrappers import vector as wrappers
    return gym, wrappers


def test_with_gymnasium_the_env_is_a_gymnasium_vector_env():
    gym, _ = gymnasium_wrappers()
    with coral.make_vec("cartpole", 2) as env:
        assert isinstance(env, gym.vector.VectorEnv)
        assert isinstance(env.metadata["autoreset_mode"], gym.vector.AutoresetMode)
        assert isinstance(env.single_observation_space, gym.spaces.Box)


def wrappers_of(gym, wrappers, make):
    """Each vector wrapper the issue names, around a fresh env from make(). Gymnasium's
    observation wrappers take only next-step envs: in same-step mode they are left out."""
    space = make().single_observation_space
    low = np.where(np.isfinite(space.low), -1.0, space.low).astype(np.float32)  # infinite bounds stay
    high = np.where(np.isfinite(space.high), 1.0, space.high).astype(np.float32)
    yield wrappers.RecordEpisodeStatistics(make())
    yield wrappers.NormalizeReward(make())
    yield wrappers.ClipReward(make(), min_reward=-0.5, max_reward=0.5)
    yield wrappers.DictInfoToList(make())
    env = make()
    if env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP:
        with pytest.raises(ValueError, match="NEXT_STEP"):
            wrappers.NormalizeObservation(env)
        return
    yield wrappers.NormalizeObservation(env)
    yield wrappers.TransformObservation(make(), lambda obs: obs * 2)
    yield wrappers.DtypeObservation(make(), np.float64)
    yield wrappers.FlattenObservation(make())
    yield wrappers.RescaleObservation(make(), min_obs=low, max_obs=high)


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_with_gymnasium_every_vector_wrapper_takes_the_env_and_steps_it(mode):
    gym, wrappers = gymnasium_wrappers()
    made = []

    def make():
        made.append(coral.make_vec("cartpole", 3, max_steps=4, autoreset_mode=mode))
        return made[-1]

    for wrapped in wrappers_of(gym, wrappers, make):
        wrapped.reset(seed=1)
        ended = 0
        for _ in range(10):
            _, _, _, truncations, _ = wrapped.step(wrapped.action_space.sample())
            ended += int(truncations.sum())
        assert ended >= 3, type(wrapped).__name__
        wrapped.close()
        assert wrapped.unwrapped.closed
    for env in made:
        env.close()


def test_with_gymnasium_record_episode_statistics_counts_the_episodes():
    gym, wrappers = gymnasium_wrappers()
    env = wrappers.RecordEpisodeStatistics(coral.make_vec("cartpole", 2, max_steps=3))
    env.reset(seed=0)
    for _ in range(8):  # two episodes of 3 steps each, and the reset step after each
        _, _, _, _, infos = env.step(np.zeros(2, dtype=np.int64))
    assert env.episode_count == 4 and list(env.length_queue) == [3, 3, 3, 3]
    env.close()


class Talking:
    """returns infos: {"reset": True} on reset; on each step its count, a tag, a nested dict and an
    env_id of its own (which coral's own env_id outranks); episodes end after two steps"""

    def __init__(self):
        self.observation_space = coral._spaces._impl.Box(-1, 1, (1,), np.float32)
        self.action_space = coral._spaces._impl.Discrete(2)
        self.t = 0

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.zeros(1, dtype=np.float32), {"reset": True}

    def step(self, action):
        self.t += 1
        info = {"count": self.t, "tag": f"t{self.t}", "nested": {"half": self.t / 2}, "env_id": -1}
        return np.zeros(1, dtype=np.float32), 0.0, False, self.t >= 2, info


coral.register("talking", Talking)


def test_a_python_envs_own_infos_come_back_keyed_and_masked():
    with coral.make_vec("talking", 3) as env:
        _, infos = env.reset(seed=0)
        assert infos["reset"].tolist() == [True] * 3 and infos["_reset"].all()
        _, _, _, _, infos = env.step(np.zeros(3, dtype=np.int64))
        assert infos["count"].dtype == np.int64 and infos["count"].tolist() == [1, 1, 1] and infos["_count"].all()
        assert infos["tag"].tolist() == ["t1"] * 3 and infos["nested"]["half"].tolist() == [0.5] * 3
        assert infos["env_id"].tolist() == [0, 1, 2]  # coral's key, not the env's
        env.step(np.zeros(3, dtype=np.int64))
        _, _, _, _, infos = env.step(np.zeros(3, dtype=np.int64))  # next-step: the reset step
        assert infos["reset"].all() and "count" not in infos


def test_same_step_final_info_holds_the_ending_steps_info_and_infos_the_resets():
    with coral.make_vec("talking", 2, autoreset_mode="same_step") as env:
        env.reset(seed=0)
        env.step(np.zeros(2, dtype=np.int64))
        _, _, _, truncations, infos = env.step(np.zeros(2, dtype=np.int64))
        assert truncations.all() and infos["reset"].all() and "count" not in infos
        final = infos["final_info"]
        assert final["count"].tolist() == [2, 2] and final["_count"].all()
        assert final["coral_episode"]["l"].tolist() == [2, 2]


def test_call_get_attr_and_set_attr_reach_each_python_env():
    with coral.make_vec("talking", 3) as env:
        env.set_attr("t", [5, 6, 7])
        assert env.get_attr("t") == (5, 6, 7)
        env.set_attr("label", "x")
        assert env.call("step", 0)[2][4]["count"] == 8 and env.call("label") == ("x", "x", "x")
        with pytest.raises(ValueError, match=r"^values: 2 values for 3 envs"):
            env.set_attr("t", [1, 2])
    with coral.make_vec("cartpole", 2) as env, pytest.raises(RuntimeError, match="C\\+\\+ env"):
        env.get_attr("t")
