"""The vector-env contract of coral.make_vec, against the real extension."""

import _thread
import threading

import numpy as np
import pytest

import coral


def random_actions(env, rng):
    return rng.integers(0, 2, size=env.num_envs)


def test_shapes_dtypes_and_spaces_contain_every_observation():
    rng = np.random.default_rng(0)
    with coral.make_vec("cartpole", 16, seed=1) as env:
        assert env.num_envs == 16
        assert env.single_observation_space.shape == (4,)
        assert env.single_observation_space.dtype == np.float32
        assert env.single_action_space.n == 2
        assert env.observation_space.shape == (16, 4)
        assert env.action_space.shape == (16,)
        assert env.metadata["autoreset_mode"] == coral.AutoresetMode.NEXT_STEP
        obs, infos = env.reset()
        assert obs.shape == (16, 4) and obs.dtype == np.float32
        assert env.observation_space.contains(obs)
        assert list(infos["env_id"]) == list(range(16)) and infos["_env_id"].all()
        for _ in range(300):
            obs, rew, term, trunc, infos = env.step(random_actions(env, rng))
            assert obs.shape == (16, 4) and obs.dtype == np.float32
            assert rew.shape == (16,) and rew.dtype == np.float32
            assert term.dtype == np.bool_ and trunc.dtype == np.bool_
            assert infos["_coral_episode"].dtype == np.bool_
            assert np.all(obs[:, 0] >= -4.8) and np.all(obs[:, 0] <= 4.8)
            assert env.observation_space.contains(obs)
            assert set(np.unique(rew)) <= {0.0, 1.0}


def test_sampled_actions_from_the_batched_action_space_are_accepted():
    with coral.make_vec("cartpole", 4) as env:
        env.reset(seed=0)
        env.action_space.seed(3)
        for _ in range(10):
            env.step(env.action_space.sample())


def run_episode_end(mode):
    """cartpole truncated at 3 steps: steps 1..5 with the same actions."""
    env = coral.make_vec("cartpole", 2, seed=5, autoreset_mode=mode, max_steps=3)
    first, _ = env.reset()
    steps = [tuple(np.copy(x) for x in (first,))]
    for _ in range(5):
        obs, rew, term, trunc, infos = env.step(np.array([1, 0]))
        steps.append(tuple(np.copy(x) for x in (obs, rew, term, trunc, infos["_coral_episode"], infos["coral_episode"]["l"]))
                     + ((np.copy(infos["final_obs"]), np.copy(infos["_final_obs"])) if mode == "same_step" else ()))
    env.close()
    return steps


def test_next_step_autoreset_around_an_episode_end():
    s = run_episode_end("next_step")
    same = run_episode_end("same_step")
    for t in (1, 2):
        assert not s[t][3].any() and not s[t][4].any()
    obs3, rew3, term3, trunc3, ended3, len3 = s[3]
    assert trunc3.all() and not term3.any() and ended3.all()
    assert list(len3) == [3, 3]
    assert (rew3 == 1.0).all()
    # The ending step shows the ended episode's last observation ...
    np.testing.assert_array_equal(obs3, same[3][6])
    # ... and the next step resets: reward 0, flags false, the action ignored.
    obs4, rew4, term4, trunc4, ended4, len4 = s[4]
    assert (rew4 == 0.0).all() and not term4.any() and not trunc4.any() and not ended4.any()
    assert list(len4) == [0, 0]
    np.testing.assert_array_equal(obs4, same[3][0])  # same-step showed the new episode's first observation at once
    assert np.all(np.abs(obs4) <= 0.05)
    # Then the new episode runs as a fresh one: the first step after the reset
    # equals same-step's first step of its new episode.
    np.testing.assert_array_equal(s[5][0], same[4][0])


def test_same_step_autoreset_puts_the_last_observation_in_final_obs():
    s = run_episode_end("same_step")
    obs3, rew3, term3, trunc3, ended3, len3, final3, final_mask3 = s[3]
    assert trunc3.all() and final_mask3.all() and ended3.all()
    assert np.all(np.abs(obs3) <= 0.05)  # already the next episode
    assert not np.array_equal(final3, obs3)
    for t in (1, 2, 4, 5):
        assert not s[t][7].any()


def trajectory(seed, steps=200, reset_seed=None, **kwargs):
    env = coral.make_vec("cartpole", 4, seed=seed, **kwargs)
    obs, _ = env.reset(seed=reset_seed)
    out = [obs.copy()]
    for t in range(steps):
        obs, rew, *_ = env.step(np.array([(t + i) % 2 for i in range(4)]))
        out.append(obs.copy())
    env.close()
    return np.stack(out)


def test_seeding_gives_identical_trajectories_and_different_seeds_differ():
    a = trajectory(3)
    np.testing.assert_array_equal(a, trajectory(3))
    np.testing.assert_array_equal(a, trajectory(3, num_threads=2, envs_per_group=1))
    np.testing.assert_array_equal(a, trajectory(3, executor="single"))
    np.testing.assert_array_equal(a, trajectory(3, spin_us=0))
    assert not np.array_equal(a, trajectory(4))
    np.testing.assert_array_equal(trajectory(0, reset_seed=3), a)


def test_reset_with_a_seed_repeats_and_a_plain_reset_goes_on():
    with coral.make_vec("cartpole", 4, seed=1) as env:
        first, _ = env.reset(seed=9)
        first = first.copy()
        env.step(np.zeros(4, dtype=np.int64))
        again, _ = env.reset(seed=9)
        np.testing.assert_array_equal(again, first)
        plain, _ = env.reset()
        assert not np.array_equal(plain, first)  # the envs' generators went on
        assert np.all(np.abs(plain) <= 0.05)


def test_partial_reset_resets_only_the_masked_envs():
    with coral.make_vec("cartpole", 4, seed=2) as env:
        env.reset()
        for _ in range(5):
            obs, *_ = env.step(np.ones(4, dtype=np.int64))
        before = obs.copy()
        mask = np.array([True, False, True, False])
        obs, infos = env.reset(options={"reset_mask": mask})
        np.testing.assert_array_equal(obs[~mask], before[~mask])
        assert np.all(np.abs(obs[mask]) <= 0.05)
        obs, rew, term, trunc, infos = env.step(np.ones(4, dtype=np.int64))
        assert list(infos["coral_episode"]["l"]) == [1, 6, 1, 6]
        with pytest.raises(TypeError, match=r"^`options\['reset_mask'\]` must have `dtype=np.bool_`, got int64"):
            env.reset(options={"reset_mask": np.array([1, 0, 1, 0])})
        with pytest.raises(ValueError, match=r"^`options\['reset_mask'\]` must have shape `\(4,\)`, got \(3,\)"):
            env.reset(options={"reset_mask": np.array([True, False, True])})
        with pytest.raises(ValueError, match=r"^`options\['reset_mask'\]` must contain .* at least one True"):
            env.reset(options={"reset_mask": np.zeros(4, dtype=bool)})
        with pytest.raises(TypeError, match=r"^`options\['reset_mask'\]` must be a numpy array, got <class 'list'>"):
            env.reset(options={"reset_mask": [True] * 4})
        with pytest.raises(ValueError, match=r"^seed: a list of seeds, or a seed with a partial reset_mask"):
            env.reset(seed=3, options={"reset_mask": mask})


@pytest.mark.parametrize("envs_per_group", [None, 1])
@pytest.mark.parametrize("threads", [1, 2])
def test_send_recv_never_loses_or_duplicates_an_env(envs_per_group, threads):
    steps = np.zeros(8, dtype=np.int64)
    with coral.make_vec("cartpole", 8, batch_size=2, num_threads=threads, envs_per_group=envs_per_group,
                        seed=1, autoreset_mode="same_step") as env:
        assert env.metadata["topology"] == "pool"
        env.async_reset()
        received = 0
        for _ in range(2000):
            obs, rew, term, trunc, infos = env.recv()
            ids = infos["env_id"]
            assert len(ids) == 2 and len(set(ids.tolist())) == 2
            for i in ids:
                steps[i] += 1
            received += 2
            env.send(np.ones(2, dtype=np.int64), ids)
        assert received == steps.sum()
        assert (steps > 0).all()


def test_send_recv_step_counts_match_the_env_lengths():
    # Episodes never end within the run (max_steps 10**6): each env's running
    # length must count exactly the actions it was sent, in every batch.
    sent = np.zeros(8, dtype=np.int64)
    with coral.make_vec("cartpole", 8, batch_size=4, envs_per_group=1, num_threads=2, seed=0,
                        max_steps=10**6) as env:
        env.async_reset()
        for _ in range(300):
            obs, rew, term, trunc, infos = env.recv()
            ids = infos["env_id"]
            lengths = infos["coral_episode"]["l"]
            for k, i in enumerate(ids):
                assert lengths[k] == sent[i]
                if term[k]:
                    sent[i] = -1  # next-step: the next step of env i is its reset, length 0
            # alternate actions keep the pole up for a while
            actions = (np.maximum(sent[ids], 0) % 2).astype(np.int64)
            env.send(actions[::-1], ids[::-1])  # any order, as long as each env gets its own
            sent[ids] += 1


def test_returned_arrays_are_views_until_the_next_step_and_copy_gives_copies():
    with coral.make_vec("cartpole", 4, seed=0) as env:
        obs, _ = env.reset()
        assert not obs.flags.owndata
        held = obs
        before = obs.copy()
        obs2, *_ = env.step(np.ones(4, dtype=np.int64))
        assert np.shares_memory(held, obs2)
        assert not np.array_equal(held, before)  # the view shows the new step
    with coral.make_vec("cartpole", 4, seed=0, copy=True) as env:
        obs, _ = env.reset()
        before = obs.copy()
        obs2, *_ = env.step(np.ones(4, dtype=np.int64))
        np.testing.assert_array_equal(obs, before)
        assert not np.shares_memory(obs, obs2)


def test_pool_batches_of_one_group_are_views():
    with coral.make_vec("cartpole", 8, batch_size=4, seed=0) as env:
        env.async_reset()
        obs, *_ = env.recv()
        assert not obs.flags.owndata


@pytest.mark.parametrize("kwargs, match", [
    (dict(env_id="no-such-env", num_envs=4), "no-such-env"),
    (dict(env_id="cartpole", num_envs=0), "num_envs: 0 is invalid"),
    (dict(env_id="cartpole", num_envs=-3), "num_envs: -3 is invalid"),
    (dict(env_id="cartpole", num_envs=2.5), "num_envs: 2.5 is invalid"),
    (dict(env_id="cartpole", num_envs=10**12), "num_envs"),
    (dict(env_id="cartpole", num_envs=4, topology="ring"), "topology: 'ring' is invalid"),
    (dict(env_id="cartpole", num_envs=4, autoreset_mode="later"), "autoreset_mode: 'later' is invalid"),
    (dict(env_id="cartpole", num_envs=4, batch_size=5), "batch"),
    (dict(env_id="cartpole", num_envs=4, num_threads=0), "num_threads: 0 is invalid"),
    (dict(env_id="cartpole", num_envs=4, max_stepz=3), "max_stepz"),
    (dict(env_id="cartpole", num_envs=4, max_steps=0), "max_steps"),
    (dict(env_id="cartpole", num_envs=4, max_steps="lots"), "max_steps"),
    (dict(env_id="cartpole", num_envs=4, executor="fibers"), "fibers"),
    (dict(env_id="cartpole", num_envs=4, seed=-1), "seed: -1 is invalid"),
    (dict(env_id="tictactoe", num_envs=4, enforce_masks="yes"), "enforce_masks: 'yes' is invalid"),
    (dict(env_id="cartpole", num_envs=4, topology="double-buffer", envs_per_group=4),
     r"^envs_per_group: 4 is invalid: double-buffer"),
    (dict(env_id="cartpole", num_envs=4, num_threads=100000), r"^num_threads: 100000 is invalid"),
])
def test_bad_arguments_raise_value_error_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        coral.make_vec(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(num_envs=2**64), r"^num_envs: 18446744073709551616 is invalid: must be at most"),
    (dict(num_envs=2**32 + 2), r"^num_envs: 4294967298 is invalid: must be at most"),
    (dict(num_envs=2, seed=2**64), r"^seed: 18446744073709551616 is invalid: must be at most"),
    (dict(num_envs=2, spin_us=2**64), r"^spin_us: 18446744073709551616 is invalid"),
    (dict(num_envs=2, batch_size=np.uint64(2**63)), r"^batch_size: 9223372036854775808 is invalid"),
])
def test_integers_too_wide_for_coral_raise_value_error_naming_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        coral.make_vec("cartpole", **kwargs)


def test_the_widest_seed_is_taken_and_one_wider_is_refused_by_every_seeding_call():
    with coral.make_vec("cartpole", 2, seed=2**64 - 1) as env:
        env.reset(seed=2**64 - 1)
        with pytest.raises(ValueError, match=r"^seed: 18446744073709551616 is invalid"):
            env.reset(seed=2**64)
        with pytest.raises(ValueError, match=r"^seed: -1 is invalid"):
            env.reset(seed=-1)
        with pytest.raises(ValueError, match=r"^seed: 18446744073709551616 is invalid"):
            env.async_reset(seed=2**64)
        env.step(np.zeros(2, dtype=np.int64))  # the refused calls changed nothing


@pytest.mark.parametrize("actions", [
    np.full(8, 2**32), np.full(8, 2**32, dtype=np.uint64), np.full(8, 2**64 - 1, dtype=np.uint64),
    np.full(8, -2**32), np.full((8, 1), 2**33),
], ids=["int64 2**32", "uint64 2**32", "uint64 max", "int64 -2**32", "column 2**33"])
def test_wide_integer_actions_are_refused_not_wrapped_around(actions):
    with coral.make_vec("cartpole", 8) as env:
        env.reset(seed=0)
        with pytest.raises(ValueError, match=r"^actions: "):
            env.step(actions)
        env.step(np.zeros(8, dtype=np.int64))


def test_env_ids_must_be_exact_integers_of_the_batch():
    with coral.make_vec("cartpole", 8, batch_size=4) as pool:
        pool.async_reset(seed=0)
        _, _, _, _, infos = pool.recv()
        ids = np.asarray(infos["env_id"], dtype=np.int64)
        actions = np.zeros(4, dtype=np.int64)
        with pytest.raises(ValueError, match=r"^env_id: \d+ is not an env of the batch"):
            pool.send(actions, ids + 2**32)
        with pytest.raises(ValueError, match=r"^env_id: env ids must be integers, got float64"):
            pool.send(actions, ids + 0.9)
        with pytest.raises(ValueError, match=r"^env_id: 18446744073709551615 is out of range"):
            pool.send(actions, np.full(4, 2**64 - 1, dtype=np.uint64))
        pool.send(actions, ids.astype(np.uint16))
        pool.recv()


def test_bad_actions_and_misuse_raise_clear_errors():
    env = coral.make_vec("cartpole", 4)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(4, dtype=np.int64))
    env.reset()
    with pytest.raises(ValueError, match=r"expected 4 actions"):
        env.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match=r"env 2: action 7 is outside Discrete\(2\)"):
        env.step(np.array([0, 1, 7, 0]))
    with pytest.raises(ValueError, match="action -1"):
        env.step(np.array([0, -1, 0, 0]))
    with pytest.raises(ValueError, match="not convertible|expected|integers"):
        env.step("left")
    with pytest.raises(ValueError, match=r"Discrete\(2\) actions must be integers, got float64"):
        env.step(np.full(4, 0.7))
    env.step(np.zeros(4, dtype=np.int64))  # still usable after the errors
    with pytest.raises(RuntimeError, match="async_reset/send/recv|recv"):
        coral.make_vec("cartpole", 8, batch_size=2).step(np.zeros(8))
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(np.zeros(4, dtype=np.int64))
    env.close()  # twice is fine

    pool = coral.make_vec("cartpole", 8, batch_size=2)
    with pytest.raises(RuntimeError, match="async_reset"):
        pool.recv()
    pool.async_reset()
    with pytest.raises(RuntimeError, match="no batch in hand"):
        pool.send(np.zeros(2, dtype=np.int64))
    _, _, _, _, infos = pool.recv()
    others = np.array([i for i in range(8) if i not in infos["env_id"]][:2])
    with pytest.raises(ValueError, match="not an env of the batch"):
        pool.send(np.zeros(2, dtype=np.int64), others)
    with pytest.raises(ValueError, match="not an env of the batch"):
        pool.send(np.zeros(2, dtype=np.int64), np.array([infos["env_id"][0]] * 2))
    pool.send(np.zeros(2, dtype=np.int64), infos["env_id"])
    pool.recv()
    pool.close()


def test_an_env_fault_raises_env_error_naming_the_env():
    env = coral.make_vec("faulty", 4, env=2, throw_step=5)
    env.reset()
    with pytest.raises(coral.EnvError, match="env 2 in group") as info:
        for _ in range(10):
            env.step(np.zeros(4, dtype=np.int64))
    assert info.value.env_id == 2
    # The env can start again.
    env.reset(seed=1)
    env.close()


def test_on_env_error_reset_is_not_available_and_non_finite_values_are_faults():
    env = coral.make_vec("faulty", 2, env=1, nan_obs=3)
    env.reset()
    with pytest.raises(coral.EnvError, match="env 1 .*(NaN|non-finite|nan)"):
        for _ in range(5):
            env.step(np.zeros(2, dtype=np.int64))
    env.close()


@pytest.mark.parametrize("topology", ["sync", "double-buffer", "pool"])
def test_every_topology_steps_every_env(topology):
    with coral.make_vec("cartpole", 8, topology=topology, num_threads=2, seed=0) as env:
        env.async_reset()
        seen = np.zeros(8, dtype=np.int64)
        for _ in range(200):
            obs, rew, term, trunc, infos = env.recv()
            assert obs.shape == (env.batch_size, 4)
            seen[infos["env_id"]] += 1
            env.send(np.zeros(env.batch_size, dtype=np.int64), infos["env_id"])
        assert (seen > 0).all()


def test_views_stay_readable_after_the_env_is_gone():
    import gc
    env = coral.make_vec("cartpole", 4, seed=0)
    obs, _ = env.reset()
    expected = obs.copy()
    env.close()
    del env
    gc.collect()
    np.testing.assert_array_equal(obs, expected)  # the rows live as long as a view does


def test_two_threads_on_one_env_get_errors_not_crashes():
    env = coral.make_vec("cartpole", 8, batch_size=2, num_threads=2, seed=0)
    env.async_reset()
    errors, batches = [], []

    def worker():
        for _ in range(300):
            try:
                obs, rew, term, trunc, infos = env.recv()
                batches.append(len(infos["env_id"]))
                env.send(np.zeros(2, dtype=np.int64), infos["env_id"])
            except RuntimeError as e:  # the other thread holds the batch, or has just sent it
                errors.append(str(e))
            except ValueError as e:
                errors.append(str(e))

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert batches and all(n == 2 for n in batches)
    assert all("batch" in e for e in errors), errors[:3]
    env.close()


def test_closing_from_another_thread_ends_a_waiting_recv():
    env = coral.make_vec("delay", 2, batch_size=1, mean_us=300000)
    env.async_reset()
    obs, rew, term, trunc, infos = env.recv()
    env.send(np.zeros(1, dtype=np.int64), infos["env_id"])
    env.recv()
    env.send(np.zeros(1, dtype=np.int64), env._v["ids"][:1].copy())
    closer = threading.Timer(0.05, env._engine.close)
    closer.start()
    with pytest.raises(RuntimeError, match="vector env: closed"):
        for _ in range(100):
            _, _, _, _, infos = env.recv()
            env.send(np.zeros(1, dtype=np.int64), infos["env_id"])
    closer.join()


@pytest.mark.parametrize("topology", ["sync", "pool"])
def test_close_from_another_thread_mid_loop_says_closed(topology):
    # close() on another thread while this one steps: whichever call the
    # close lands in (recv, send, step, or between them), the error says the
    # env is closed, never that no batch is in hand; and nothing hangs.
    for trial in range(20):
        if topology == "pool":
            env = coral.make_vec("cartpole", 8, batch_size=2, num_threads=2)
            env.async_reset()
        else:
            env = coral.make_vec("cartpole", 8)
            env.reset()
        closer = threading.Timer(0.002 * (trial % 10), env.close)
        closer.start()
        with pytest.raises(RuntimeError, match="vector env: closed|the vector env is closed"):
            for _ in range(10_000_000):
                if topology == "pool":
                    _, _, _, _, infos = env.recv()
                    env.send(np.zeros(len(infos["env_id"]), dtype=np.int64), infos["env_id"])
                else:
                    env.step(np.zeros(8, dtype=np.int64))
        closer.join()


class SlowStep:
    """each step waits for a gate the test opens at its end (or a timer, 120 s on)"""

    started = threading.Event()
    gate = threading.Event()

    def __init__(self):
        self.observation_space = coral._spaces._impl.Box(-1, 1, (1,), np.float32)
        self.action_space = coral._spaces._impl.Discrete(2)

    def reset(self, seed=None, options=None):
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        SlowStep.started.set()
        SlowStep.gate.wait()
        return np.zeros(1, dtype=np.float32), 0.0, False, False, {}


def test_close_after_ctrl_c_does_not_wait_for_env_steps_past_the_stop_deadline():
    coral.register("slow-step", SlowStep)
    env = coral.make_vec("slow-step", 4, envs_per_group=2)
    env.reset(seed=0)
    # A close that waited for the steps would return only once this opens the gate.
    opener = threading.Timer(120, SlowStep.gate.set)
    opener.start()
    ctrl_c = threading.Thread(target=lambda: SlowStep.started.wait(30) and _thread.interrupt_main())
    ctrl_c.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            env.step(np.zeros(4, dtype=np.int64))  # two envs in each group, each step held at the gate
        env.close()
        assert not SlowStep.gate.is_set(), "close waited for the env steps"
        assert env.closed
    finally:
        opener.cancel()
        SlowStep.gate.set()  # the abandoned steps end now
        ctrl_c.join()
