"""Multi-agent envs from Python: one row per agent slot, infos["active"], action masks, and
PettingZoo-style parallel envs written in Python registered with coral.register."""

import itertools

import numpy as np
import pytest

import coral

# --- a PettingZoo parallel env written by hand (pettingzoo is not installed) -------------------

_names = itertools.count()


def _register(env_class, **defaults):
    name = f"test-pz-{next(_names)}"
    coral.register(name, env_class, **defaults)
    return name


class Relay:
    """Three agents on a schedule: 'b' leaves (terminated) after step 2 and comes back at step 4;
    'c' is cut off (truncated) after step 3; the episode ends after step 6, when everyone leaves.
    Each agent sees (its slot, the step); its action mask forbids action 2 for 'a' and action 0
    for the others; its reward is 10 × slot + its action. Every step's actions are recorded."""

    possible_agents = ["a", "b", "c"]

    def __init__(self):
        self.agents = []
        self.t = 0
        self.received = []  # the actions dict of every step
        self.seeds = []

    def observation_space(self, agent):
        return coral.spaces.Dict({
            "observation": coral.spaces.Box(-100.0, 100.0, (2,), np.float32),
            "action_mask": coral.spaces.Box(0, 1, (3,), np.int8),
        })

    def action_space(self, agent):
        return coral.spaces.Discrete(3)

    def _obs(self, agent):
        slot = self.possible_agents.index(agent)
        mask = np.array([1, 1, 0] if agent == "a" else [0, 1, 1], dtype=np.int8)
        return {"observation": np.array([slot, self.t], dtype=np.float32), "action_mask": mask}

    def reset(self, seed=None, options=None):
        self.seeds.append(seed)
        self.t = 0
        self.agents = list(self.possible_agents)
        return {a: self._obs(a) for a in self.agents}, {a: {"slot": self.possible_agents.index(a)} for a in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents), (actions, self.agents)
        self.received.append(dict(actions))
        self.t += 1
        acting = list(self.agents)
        rewards = {a: 10.0 * self.possible_agents.index(a) + int(actions[a]) for a in acting}
        terminations = {a: False for a in acting}
        truncations = {a: False for a in acting}
        if self.t == 2:
            terminations["b"] = True
        if self.t == 3:
            truncations["c"] = True
        if self.t == 6:
            terminations = {a: True for a in acting}
        obs = {a: self._obs(a) for a in acting}
        self.agents = [a for a in acting if not (terminations[a] or truncations[a])]
        if self.t == 4:
            self.agents.insert(1, "b")  # back in play
            obs["b"] = self._obs("b")
        return obs, rewards, terminations, truncations, {a: {"t": self.t} for a in acting}


def _legal_actions(infos, n):
    """The lowest legal action of each row (rows without a legal action, or inactive: 1)."""
    out = np.ones(n, dtype=np.int64)
    for r in range(n):
        if infos["active"][r]:
            out[r] = int(np.flatnonzero(infos["action_mask"][r])[0])
    return out


def test_a_pettingzoo_env_has_a_row_per_slot_with_agents_leaving_and_coming_back():
    name = _register(Relay)
    with coral.make_vec(name, 2, seed=5) as env:
        assert (env.num_envs, env.agents_per_env) == (6, 3)
        # The action mask leaves the observation and becomes infos["action_mask"].
        assert list(env.single_observation_space.spaces) == ["observation"]
        assert env.single_action_space.n == 3
        obs, infos = env.reset()
        assert [e.seeds for e in env.envs] == [[5], [6]]
        np.testing.assert_array_equal(obs["observation"][:3], [[0, 0], [1, 0], [2, 0]])
        np.testing.assert_array_equal(infos["active"], [True] * 6)
        np.testing.assert_array_equal(infos["action_mask"][:3], [[1, 1, 0], [0, 1, 1], [0, 1, 1]])
        np.testing.assert_array_equal(infos["slot"], [0, 1, 2, 0, 1, 2])  # each slot's own info

        expected_active = {1: [1, 1, 1], 2: [1, 0, 1], 3: [1, 0, 0], 4: [1, 1, 0], 5: [1, 1, 0], 6: [0, 0, 0]}
        for t in range(1, 7):
            actions = _legal_actions(infos, 6)
            actions[~infos["active"]] = 7  # an inactive row's action is ignored, even out of range
            before = infos["active"].copy()
            obs, rewards, terminated, truncated, infos = env.step(actions)
            np.testing.assert_array_equal(infos["active"], np.tile(expected_active[t], 2).astype(bool), err_msg=f"t={t}")
            for e in env.envs:
                # Only the agents in play got an action, each the row's action.
                assert e.received[-1] == {a: actions[e.possible_agents.index(a)] for a in e.received[-1]}
            want = np.where(before, 10.0 * np.tile([0, 1, 2], 2) + actions, 0.0)
            np.testing.assert_array_equal(rewards, want, err_msg=f"t={t}")
            if t == 2:
                np.testing.assert_array_equal(terminated, [False, True, False] * 2)
                assert infos["coral_episode"]["l"][1] == 2  # slot 1's agent episode: 2 steps
            if t == 3:
                np.testing.assert_array_equal(truncated, [False, False, True] * 2)
        # Every agent left: the env's episode is over, and its next step starts a new one.
        assert terminated[0] and terminated[3]
        assert infos["coral_episode"]["l"][0] == 6
        obs, rewards, terminated, truncated, infos = env.step(np.ones(6, dtype=np.int64))
        np.testing.assert_array_equal(infos["active"], [True] * 6)
        np.testing.assert_array_equal(obs["observation"][:, 1], 0)
        np.testing.assert_array_equal(rewards, 0)
        assert all(len(e.received) == 6 for e in env.envs)  # the reset step took no actions


def test_a_masked_action_from_python_is_refused_naming_env_row_and_action_before_the_env_sees_it():
    name = _register(Relay)
    with coral.make_vec(name, 2, seed=0) as env:
        _, infos = env.reset()
        actions = _legal_actions(infos, 6)
        actions[4] = 0  # env 1's slot 1, 'b': action 0 is masked out
        with pytest.raises(ValueError, match=r"^actions: env 1, row 4 \(agent slot 1\): action 0 is not allowed by "
                                             r"its action mask \(legal now: 1, 2\)"):
            env.step(actions)
        assert all(e.received == [] for e in env.envs)
        actions[4] = 1
        env.step(actions)  # the batch is still in hand, and legal actions go through
        assert all(len(e.received) == 1 for e in env.envs)


def test_enforce_masks_false_passes_a_masked_action_to_the_env():
    name = _register(Relay)
    with coral.make_vec(name, 1, seed=0, enforce_masks=False) as env:
        env.reset()
        env.step(np.array([2, 0, 0]))  # every one of them masked out
        assert env.envs[0].received == [{"a": 2, "b": 0, "c": 0}]


def test_a_cpp_two_player_game_shows_who_moves_and_refuses_or_passes_on_illegal_moves():
    with coral.make_vec("tictactoe", 2, seed=0) as env:
        assert (env.num_envs, env.agents_per_env) == (4, 2)
        _, infos = env.reset()
        np.testing.assert_array_equal(infos["active"], [True, False, True, False])
        assert infos["action_mask"].dtype == np.int8 and infos["action_mask"].shape == (4, 9)
        # Row 1 waits: its action (out of range) is ignored; row 0 and 2 take cell 4.
        _, _, _, _, infos = env.step(np.array([4, -3, 4, 99]))
        np.testing.assert_array_equal(infos["active"], [False, True, False, True])
        assert infos["action_mask"][1][4] == 0
        with pytest.raises(ValueError, match=r"^actions: env 0, row 1 \(agent slot 1\): action 4 is not allowed"):
            env.step(np.array([0, 4, 0, 0]))
    # Passed on, an illegal move loses the game for the mover (two_player_game.hpp).
    with coral.make_vec("tictactoe", 1, seed=0, enforce_masks=False) as env:
        env.reset()
        env.step(np.array([4, 0]))
        _, rewards, terminated, _, _ = env.step(np.array([0, 4]))
        np.testing.assert_array_equal(rewards, [1.0, -1.0])
        np.testing.assert_array_equal(terminated, [True, True])


def test_a_population_env_keeps_inactive_rows_at_zero_and_masked_actions_out():
    with coral.make_vec("population", 2, seed=3) as env:
        rng = np.random.default_rng(0)
        _, infos = env.reset()
        went_inactive = came_back = 0
        for _ in range(200):
            actions = np.array([rng.choice(np.flatnonzero(infos["action_mask"][r])) if infos["active"][r] else -1
                                for r in range(env.num_envs)])
            before = infos["active"].copy()
            _, rewards, terminated, truncated, infos = env.step(actions)
            ended = terminated | truncated
            assert (rewards[~before & ~ended] == 0).all()
            went_inactive += int((before & ~infos["active"]).sum())
            came_back += int((~before & infos["active"]).sum())
        assert went_inactive > 0 and came_back > 0


def test_a_reset_mask_takes_the_rows_of_an_env_together():
    with coral.make_vec("tictactoe", 2, seed=0) as env:
        env.reset()
        with pytest.raises(ValueError, match=r"env 1's rows 2\.\.3 differ"):
            env.reset(options={"reset_mask": np.array([True, True, True, False])})
        env.step(np.array([4, 0, 4, 0]))
        obs, infos = env.reset(options={"reset_mask": np.array([False, False, True, True])})
        np.testing.assert_array_equal(infos["active"], [False, True, True, False])  # env 0 played on, env 1 anew
        assert obs[2].sum() == 0


def test_a_gymnasium_env_with_an_action_mask_key_gets_its_rows_masked():
    class Masked:
        """One agent; the mask allows only the action that equals the step count mod 3."""

        def __init__(self):
            self.observation_space = coral.spaces.Dict({
                "obs": coral.spaces.Box(0.0, 10.0, (1,), np.float32),
                "action_mask": coral.spaces.MultiDiscrete([2, 2, 2])})
            self.action_space = coral.spaces.Discrete(3)
            self.t = 0
            self.taken = []

        def _obs(self):
            mask = np.zeros(3, dtype=np.int8)
            mask[self.t % 3] = 1
            return {"obs": np.array([self.t], dtype=np.float32), "action_mask": mask}

        def reset(self, seed=None, options=None):
            self.t = 0
            return self._obs(), {}

        def step(self, action):
            self.taken.append(int(action))
            self.t += 1
            return self._obs(), 1.0, self.t == 4, False, {}

    name = _register(Masked)
    with coral.make_vec(name, 2, seed=0) as env:
        assert env.agents_per_env == 1
        assert list(env.single_observation_space.spaces) == ["obs"]
        _, infos = env.reset()
        assert "active" not in infos
        for t in range(4):
            np.testing.assert_array_equal(infos["action_mask"], np.eye(3, dtype=np.int8)[[t % 3] * 2])
            with pytest.raises(ValueError, match=rf"^actions: env 0: action {(t + 1) % 3} is not allowed by its "
                                                 rf"action mask \(legal now: {t % 3}\)"):
                env.step(np.array([(t + 1) % 3, t % 3]))
            _, _, terminated, _, infos = env.step(np.full(2, t % 3))
        np.testing.assert_array_equal(terminated, [True, True])
        assert [e.taken for e in env.envs] == [[0, 1, 2, 0]] * 2


# --- refused inputs ---------------------------------------------------------------------------

class _Base(Relay):
    pass


def test_agents_whose_spaces_differ_are_refused_naming_them():
    class Uneven(_Base):
        def action_space(self, agent):
            return coral.spaces.Discrete(3 if agent != "c" else 4)

    with pytest.raises(ValueError, match=r"agents 'a' and 'c' have different action spaces .*one layout"):
        coral.make_vec(_register(Uneven), 1)


def test_an_agent_outside_possible_agents_is_refused_naming_it():
    class Stranger(_Base):
        def reset(self, seed=None, options=None):
            obs, infos = super().reset(seed, options)
            self.agents.append("zed")
            return obs, infos

    with coral.make_vec(_register(Stranger), 1) as env:
        with pytest.raises(coral.EnvError, match=r"agent 'zed' \(in env.agents after reset\(\)\) is not one of "
                                                 r"possible_agents \['a', 'b', 'c'\]"):
            env.reset()

    class StrangeReward(_Base):
        def step(self, actions):
            out = super().step(actions)
            out[1]["zed"] = 1.0
            return out

    with coral.make_vec(_register(StrangeReward), 1) as env:
        _, infos = env.reset()
        with pytest.raises(coral.EnvError, match=r"agent 'zed' \(in rewards\) is not one of possible_agents"):
            env.step(_legal_actions(infos, 3))


def test_missing_methods_a_bad_mask_and_a_missing_observation_are_refused_by_name():
    class NoStep:
        possible_agents = ["a"]

        def observation_space(self, agent):
            return coral.spaces.Box(0.0, 1.0, (1,), np.float32)

        def action_space(self, agent):
            return coral.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            return {}, {}

    with pytest.raises(ValueError, match=r"needs step; possible_agents a list, the others methods"):
        coral.make_vec(_register(NoStep), 1)

    class WideMask(_Base):
        def observation_space(self, agent):
            return coral.spaces.Dict({"observation": coral.spaces.Box(0.0, 1.0, (2,), np.float32),
                                      "action_mask": coral.spaces.Box(0, 1, (4,), np.int8)})

    with pytest.raises(ValueError, match=r"its 'action_mask' has 4 values, its action space 3"):
        coral.make_vec(_register(WideMask), 1)

    class Unseen(_Base):
        def reset(self, seed=None, options=None):
            obs, infos = super().reset(seed, options)
            del obs["b"]
            return obs, infos

    with coral.make_vec(_register(Unseen), 1) as env:
        with pytest.raises(coral.EnvError, match=r"reset\(\) returned no observation for agent 'b', which is in play"):
            env.reset()


def test_coral_train_treats_a_python_multi_agent_env_as_it_treats_a_cpp_one():
    """Whatever coral train does with a multi-agent env (refuse it, or train it), it does the same
    for one written in Python: nothing Python-specific stands in the way."""
    def outcome(env):
        try:
            result = coral.train(env=env, total_steps=2048, no_run_dir=True, verbose=False)
            return "trained", result["env_steps"]
        except ValueError as e:
            return "refused", str(e)

    cpp = outcome("population")
    name = _register(Relay)
    python = outcome(name)
    assert python[0] == cpp[0]
    if cpp[0] == "refused":
        assert python[1] == cpp[1].replace("'population'", repr(name)).replace("8 agents", "3 agents")
    else:
        assert python[1] >= 2048


class Signals:
    """A PettingZoo parallel env that can be learnt: three agents each see a cue (one of three, one-hot)
    and earn 1 for answering it. The answer after the cue is masked (illegal) and would pay 2 if taken;
    agent 'c' leaves after 4 steps, the episode ends after 8. Per agent, the optimum is a return equal
    to its steps in play (8, 8, 4: a mean of 6.67); a policy that answers at random among the legal
    actions earns half that (3.33)."""

    possible_agents = ["a", "b", "c"]
    steps = 8

    def __init__(self):
        self.agents = []
        self.rng = np.random.default_rng()
        self.cues = {}
        self.t = 0

    def observation_space(self, agent):
        return coral.spaces.Dict({
            "observation": coral.spaces.Box(0.0, 1.0, (3,), np.float32),
            "action_mask": coral.spaces.Box(0, 1, (3,), np.int8),
        })

    def action_space(self, agent):
        return coral.spaces.Discrete(3)

    def _obs(self, agent):
        cue = self.cues[agent]
        one_hot = np.zeros(3, dtype=np.float32)
        one_hot[cue] = 1.0
        mask = np.ones(3, dtype=np.int8)
        mask[(cue + 1) % 3] = 0
        return {"observation": one_hot, "action_mask": mask}

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.agents = list(self.possible_agents)
        self.cues = {a: int(self.rng.integers(3)) for a in self.agents}
        return {a: self._obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        acting = list(self.agents)
        rewards = {}
        for a in acting:
            answer, cue = int(actions[a]), self.cues[a]
            rewards[a] = 1.0 if answer == cue else (2.0 if answer == (cue + 1) % 3 else 0.0)
        ended = {a: self.t == self.steps or (a == "c" and self.t == 4) for a in acting}
        truncations = {a: False for a in acting}
        self.cues = {a: int(self.rng.integers(3)) for a in acting}
        self.agents = [a for a in acting if not ended[a]]
        return ({a: self._obs(a) for a in acting}, rewards, ended, truncations, {a: {} for a in acting})


def test_ppo_trains_a_python_pettingzoo_env_to_its_optimum_per_agent_episode():
    """coral.train on a PettingZoo env written in Python: every agent's episode reaches its optimum
    of 1 a step (random legal answers: 0.5), and the masked answer, which would pay 2, is never taken
    (a return above 1 a step would show it was). Episodes are per agent: 8 steps for a and b, 4 for c."""
    name = _register(Signals)
    result = coral.train(env=name, algo="ppo", seed=3, total_steps=60000, num_envs=8, horizon=32,
                         no_run_dir=True, verbose=False, keep_going=True)
    assert result["env_steps"] >= 60000
    assert 4 < result["mean_length"] < 8  # agent episodes of both lengths among the last 100
    per_step = result["mean_return"] / result["mean_length"]  # both over the same 100 episodes
    assert 0.95 <= per_step <= 1.0 + 1e-9
