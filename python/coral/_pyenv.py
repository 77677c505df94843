"""coral.register: a Gymnasium-style Python env class run inside coral."""

import contextlib
import numbers
import threading
import types

import numpy as np

from . import _coral
from . import _spaces


class _Adapter:
    """What coral's C++ side calls (under the GIL): flat rows in and out."""

    __slots__ = ("env", "seed", "obs", "act", "info", "final_info")

    def __init__(self, env, seed, obs_layout, act_layout):
        self.env = env
        self.seed = seed
        self.obs = obs_layout
        self.act = act_layout
        # The env's info of its last reset or step, and on a reset the one it
        # replaced (a same-step reset's final_info); the vector env reads them
        # for the envs of the batch it holds, while those envs wait.
        self.info = {}
        self.final_info = {}

    def reset(self):
        if self.seed is not None:
            result = self.env.reset(seed=self.seed)
            self.seed = None  # later episodes go on from the env's own generator, as in Gymnasium
        else:
            result = self.env.reset()
        obs, info = result if isinstance(result, tuple) and len(result) == 2 else (result, {})
        self.final_info, self.info = self.info, info
        return self.obs.flatten_one(obs)

    def step(self, discrete, continuous):
        obs, reward, terminated, truncated, info = self.env.step(self.act.unflatten_one(discrete, continuous))
        self.info = info
        return self.obs.flatten_one(obs), float(reward), bool(terminated), bool(truncated)


# Gymnasium's convention (and PettingZoo's classic games'): the legal actions are a key of a Dict observation.
MASK_KEY = "action_mask"


class _AgentsAdapter:
    """What coral's C++ side calls for an env with agent slots (PettingZoo's parallel API) or an
    action mask: whole blocks of rows in and out, slot i being possible_agents[i]. A single-agent
    env (`single`) is one slot, agent 0, out of play once its episode ends."""

    __slots__ = ("env", "seed", "name", "single", "agents", "slot", "obs", "act", "masked", "live", "info",
                 "final_info", "rows", "rewards", "terminated", "truncated", "active", "masks")

    def __init__(self, env, seed, name, agents, obs_layout, act_layout, width, mask_size, single=False):
        self.env = env
        self.seed = seed
        self.name = name
        self.single = single
        self.agents = list(agents)
        self.slot = {agent: i for i, agent in enumerate(self.agents)}
        self.obs = obs_layout
        self.act = act_layout
        self.masked = mask_size > 0
        self.live = []  # the agents in play after the last reset or step, as env.agents said
        m = len(self.agents)
        self.info = [{} for _ in range(m)]  # each slot's info of the last reset or step (see _Adapter)
        self.final_info = [{} for _ in range(m)]
        self.rows = np.zeros((m, width), dtype=np.float32)
        self.rewards = np.zeros(m, dtype=np.float32)
        self.terminated = np.zeros(m, dtype=np.uint8)
        self.truncated = np.zeros(m, dtype=np.uint8)
        self.active = np.zeros(m, dtype=np.uint8)
        self.masks = np.ones((m, mask_size), dtype=np.uint8) if self.masked else None

    def reset(self):
        if self.seed is not None:
            result = self.env.reset(seed=self.seed)
            self.seed = None
        else:
            result = self.env.reset()
        obs, infos = result if isinstance(result, tuple) and len(result) == 2 else (result, {})
        if self.single:
            obs, infos, live = {0: obs}, {0: infos}, [0]
        else:
            live = self._in_play("reset")
        self.rows[:] = 0
        self.active[:] = 0
        if self.masked:
            self.masks[:] = 1
        self.final_info, self.info = self.info, [{} for _ in self.agents]
        self._take(obs, infos, live, "reset")
        return self.rows, self.active, self.masks

    def step(self, discrete, continuous, active):
        actions = {agent: self.act.unflatten_one(discrete[self.slot[agent]], continuous[self.slot[agent]])
                   for agent in self.live}
        self.rewards[:] = 0
        self.terminated[:] = 0
        self.truncated[:] = 0
        self.active[:] = 0
        if self.single:
            obs, reward, terminated, truncated, info = self.env.step(actions[0])
            obs, rewards, terminations, truncations, infos = {0: obs}, {0: reward}, {0: terminated}, {0: truncated}, {0: info}
            live = [0]  # stays in play, as a C++ env's one row does: its ended flags end the episode
        else:
            obs, rewards, terminations, truncations, infos = self.env.step(actions)
            live = self._in_play("step")
        for what, given, out in (("rewards", rewards, self.rewards), ("terminations", terminations, self.terminated),
                                 ("truncations", truncations, self.truncated)):
            for agent, value in self._entries(given, what):
                out[agent] = value
        # An agent whose episode ended keeps its last observation in its row (coral's final observation).
        for i, value in self._entries(obs, "observations"):
            self.rows[i] = self.obs.flatten_one(value)
        self._take(obs, infos, live, "step", write_rows=False)
        return self.rows, self.rewards, self.terminated, self.truncated, self.active, self.masks

    def _take(self, obs, infos, live, what, write_rows=True):
        """The rows of the agents in play: active, observed (unless written already), masked."""
        for agent in live:
            i = self.slot[agent]
            if not isinstance(obs, dict) or agent not in obs:
                raise ValueError(f"env {self.name!r}: {what}() returned no observation for agent {agent!r}, which "
                                 "is in play (in env.agents)")
            self.active[i] = 1
            if write_rows:
                self.rows[i] = self.obs.flatten_one(obs[agent])
            if self.masked:
                self.masks[i] = self._mask(agent, obs[agent], what)
        for i, info in self._entries(infos, "infos"):
            self.info[i] = info if isinstance(info, dict) else {}
        self.live = live

    def _mask(self, agent, value, what):
        mask = np.asarray(value[MASK_KEY] if isinstance(value, dict) else None)
        if mask.size != self.masks.shape[1] or not np.isin(mask, (0, 1)).all():
            raise ValueError(f"env {self.name!r}: {what}(): agent {agent!r}'s {MASK_KEY!r} must be "
                             f"{self.masks.shape[1]} values of 0 or 1 (one per action), got {mask!r}")
        return mask.reshape(-1)

    def _entries(self, given, what):
        """(slot, value) of each entry of `given`, a dict keyed by agent."""
        if not isinstance(given, dict):
            raise ValueError(f"env {self.name!r}: step() returned {what} as {type(given).__name__}, not a dict "
                             "keyed by agent")
        return [(self._slot_of(agent, what), value) for agent, value in given.items()]

    def _slot_of(self, agent, what):
        try:
            return self.slot[agent]
        except (KeyError, TypeError):
            raise ValueError(f"env {self.name!r}: agent {agent!r} (in {what}) is not one of possible_agents "
                             f"{self.agents!r}") from None

    def _in_play(self, what):
        agents = getattr(self.env, "agents", None)
        if agents is None:
            raise ValueError(f"env {self.name!r}: env.agents is missing after {what}() (PettingZoo's parallel API: "
                             "the agents in play)")
        live = list(agents)
        for agent in live:
            self._slot_of(agent, f"env.agents after {what}()")
        return live


def _agent_spaces(env, name):
    """A PettingZoo parallel env's agents and the one (observation space, action space) they share."""
    missing = [] if hasattr(env, "possible_agents") else ["possible_agents"]
    missing += [attr for attr in ("observation_space", "action_space", "reset", "step")
                if not callable(getattr(env, attr, None))]
    if missing:
        raise ValueError(f"register: env {name!r}: a multi-agent env (PettingZoo's parallel API) needs "
                         f"{', '.join(missing)}; possible_agents a list, the others methods")
    agents = list(env.possible_agents)
    if not agents:
        raise ValueError(f"register: env {name!r}: possible_agents is empty")
    if len(set(agents)) != len(agents):
        raise ValueError(f"register: env {name!r}: possible_agents {agents!r} names an agent twice")
    spaces = []
    for which in ("observation_space", "action_space"):
        first = getattr(env, which)(agents[0])
        for agent in agents[1:]:
            other = getattr(env, which)(agent)
            if _spaces.to_desc(other) != _spaces.to_desc(first):
                raise ValueError(f"register: env {name!r}: agents {agents[0]!r} and {agent!r} have different "
                                 f"{which.replace('_', ' ')}s ({first!r} and {other!r}); coral gives every agent "
                                 "slot a row of one layout")
        spaces.append(first)
    return agents, spaces[0], spaces[1]


def _without_mask(space, name, act_desc):
    """(observation space, its description, mask size): the space without its action_mask key, which
    becomes the rows' action mask (one byte per value of each discrete action component)."""
    desc = _spaces.to_desc(space)
    if desc[0] != "dict" or MASK_KEY not in dict(desc[1]):
        return space, desc, 0
    size = _spaces.discrete_values(act_desc)
    mask_desc = dict(desc[1])[MASK_KEY]
    if size == 0:
        raise ValueError(f"register: env {name!r}: its observation has an {MASK_KEY!r} key, but its action space "
                         f"has no discrete values to mask")
    if _spaces.flat_size(mask_desc) != size:
        raise ValueError(f"register: env {name!r}: its {MASK_KEY!r} has {_spaces.flat_size(mask_desc)} values, its "
                         f"action space {size} (one per value of each discrete component)")
    rest = [(key, child) for key, child in desc[1] if key != MASK_KEY]
    if not rest:
        raise ValueError(f"register: env {name!r}: its observation holds only {MASK_KEY!r}; coral needs something "
                         "to observe beside it")
    stripped = ("dict", rest)
    return _spaces.from_desc(stripped), stripped, size


_made = threading.local()


@contextlib.contextmanager
def first_spaces(seeded=True):
    """Within the block: `seen.spaces` becomes (observation space, action space,
    their descriptions) of the first Python env made on this thread (None if
    none is), and `seen.adapters` maps each env index to the adapter last made
    for it. coral's C++ spaces hold neither dtypes nor starts; a vector env
    over a Python env takes the env's own spaces from here, as Gymnasium's
    vector envs take their first env's, and its envs' infos from the adapters.
    The envs made in the block are a vector env's: env i's first reset gets
    seed + i, as Gymnasium's vector envs seed theirs, or (seeded=False) no
    seed at all."""
    seen = types.SimpleNamespace(spaces=None, adapters={}, seeded=seeded)
    previous = getattr(_made, "seen", None)
    _made.seen = seen
    try:
        yield seen
    finally:
        _made.seen = previous


def _key(name, value):
    if isinstance(value, bool):
        return (name, "bool", "true" if value else "false", f"{name} (default {value})")
    if isinstance(value, numbers.Integral):
        return (name, "int", str(int(value)), f"{name} (default {value})")
    if isinstance(value, numbers.Real):
        return (name, "float", repr(float(value)), f"{name} (default {value})")
    raise ValueError(f"register: {name}={value!r} is invalid: a default must be an int, float or bool "
                     "(the env settings coral passes on)")


def register(name, env_class, **defaults):
    """Registers `env_class` as coral env `name`. Its constructor gets **defaults, overridden
    by the env settings of make_vec(**env_args) or train(env_arg=...). Each env
    gets a seed drawn from (run seed, env index) on its first reset (in a
    vector env, run seed + env index, as Gymnasium's vector envs seed theirs).

    `env_class` makes either
    - a Gymnasium-style env: reset(seed=...) -> (obs, info), step(action) -> (obs, reward,
      terminated, truncated, info), observation_space, action_space; or
    - a multi-agent env written to PettingZoo's parallel API: possible_agents (a list),
      agents (those in play), observation_space(agent), action_space(agent), reset(seed=...,
      options=...) -> (obs, infos), step(actions) -> (obs, rewards, terminations,
      truncations, infos), all dicts keyed by agent. Slot i is possible_agents[i]: one row of
      coral's per slot, active while its agent is in env.agents (agents may leave and come
      back); the env's episode ends when env.agents is empty. Every agent must have the same
      spaces.
    An observation space that is a Dict with an "action_mask" key (Gymnasium's convention)
    gives the rows' action masks: that key (one 0/1 value per value of each discrete action
    component) leaves the observation and becomes infos["action_mask"] in make_vec and the
    mask a coral policy acts with."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"register: name {name!r} is invalid: must be a non-empty string")
    if not callable(env_class):
        raise ValueError(f"register: {env_class!r} is not a class or callable")
    keys = [_key(k, v) for k, v in defaults.items()]

    def make_adapter(seed, env_index, kwargs):
        env = env_class(**kwargs)
        seen = getattr(_made, "seen", None)
        if seen is None:  # coral.train: unrelated streams for distinct (seed, index) pairs
            env_seed = int(np.random.SeedSequence([int(seed), int(env_index)]).generate_state(1)[0])
        else:
            env_seed = int(seed) + int(env_index) if seen.seeded else None
        # PettingZoo's parallel API: possible_agents, and spaces that are methods of an agent.
        multi_agent = hasattr(env, "possible_agents") or callable(getattr(env, "observation_space", None))
        if multi_agent:
            agents, observation_space, action_space = _agent_spaces(env, name)
        else:
            agents, observation_space, action_space = [0], env.observation_space, env.action_space
        act_desc = _spaces.to_desc(action_space)
        observation_space, obs_desc, mask_size = _without_mask(observation_space, name, act_desc)
        obs_layout, act_layout = _spaces.ObservationLayout(obs_desc), _spaces.ActionLayout(act_desc)
        if multi_agent or mask_size:
            adapter = _AgentsAdapter(env, env_seed, name, agents, obs_layout, act_layout, _spaces.flat_size(obs_desc),
                                     mask_size, single=not multi_agent)
            made = (adapter, obs_desc, act_desc, len(agents), mask_size)
        else:
            adapter = _Adapter(env, env_seed, obs_layout, act_layout)
            made = (adapter, obs_desc, act_desc)
        if seen is not None:
            if seen.spaces is None:
                seen.spaces = (observation_space, action_space, obs_desc, act_desc)
            seen.adapters[int(env_index)] = adapter
        return made

    doc = (getattr(env_class, "__doc__", None) or "").strip().splitlines()
    description = doc[0] if doc else f"Python env {getattr(env_class, '__qualname__', env_class)!s}"
    try:
        _coral.register_env(name, description, keys, make_adapter)
    except RuntimeError as e:
        raise ValueError(str(e)) from None
