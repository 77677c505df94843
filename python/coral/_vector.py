"""coral.make_vec: coral's sampler as a Gymnasium vector env."""

import numbers
import re

import numpy as np

from . import _coral
from . import _gym
from . import _pyenv
from . import _spaces
from ._gym import AutoresetMode

# coral's names, the enum, and the enum's values ("NextStep", as Gymnasium's vector envs take them).
ENGINE_MODES = {AutoresetMode.NEXT_STEP: "next_step", AutoresetMode.SAME_STEP: "same_step",
                AutoresetMode.DISABLED: "disabled"}
AUTORESET_MODES = {**{name: mode for mode, name in ENGINE_MODES.items()},
                   **{mode: mode for mode in ENGINE_MODES}, **{mode.value: mode for mode in ENGINE_MODES}}
# The info keys coral fills itself; stats_key may not take one of them.
OWN_INFO_KEYS = ("env_id", "failed", "final_obs", "final_info")
TOPOLOGIES = ("sync", "double-buffer", "pool")
# What render_mode a C++ env takes, and the frame rate its metadata gives recorders.
RENDER_MODES = (None, "rgb_array")
RENDER_FPS = 30


# The widest value each C++ parameter takes: a larger Python int would wrap
# around or fail pybind11's conversion with a TypeError naming no argument.
MAX_COUNT = 2**31 - 1  # env ids are int32 in the batch
MAX_SEED = 2**64 - 1
MAX_INT64 = 2**63 - 1


def _count(name, value, minimum=1, allow_none=False, maximum=MAX_COUNT):
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}: {value!r} is invalid: must be an integer")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name}: {value} is invalid: must be at least {minimum}")
    if value > maximum:
        raise ValueError(f"{name}: {value} is invalid: must be at most {maximum}")
    return value


def _seed(value):
    return _count("seed", value, minimum=0, maximum=MAX_SEED)


def _env_arg_text(key, value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (numbers.Integral, numbers.Real, str)):
        return str(value)
    raise ValueError(f"{key}: {value!r} is invalid: env settings are numbers or booleans")


_FLAG = re.compile(r"--([a-z][a-z-]*)")
_ARGUMENT_OF_FLAG = {"threads": "num_threads"}


def _python_names(message):
    """coral's messages name its command-line flags; here they are make_vec's arguments."""
    def name(match):
        flag = match.group(1)
        return _ARGUMENT_OF_FLAG.get(flag, flag.replace("-", "_"))
    return _FLAG.sub(name, message)


def make_vec(env_id, num_envs, *, batch_size=None, num_threads=None, topology=None, seed=0,
             autoreset_mode="next_step", copy=False, envs_per_group=None, executor="threads", spin_us=50,
             stats_key="coral_episode", coral_infos=True, render_mode=None, enforce_masks=True, **env_args):
    """coral's envs as a vector env; see VectorEnv."""
    return VectorEnv(env_id, num_envs, batch_size=batch_size, num_threads=num_threads, topology=topology,
                     seed=seed, autoreset_mode=autoreset_mode, copy=copy, envs_per_group=envs_per_group,
                     executor=executor, spin_us=spin_us, stats_key=stats_key, coral_infos=coral_infos,
                     render_mode=render_mode, enforce_masks=enforce_masks, **env_args)


class VectorEnv(_gym.VectorEnv):
    """`num_envs` coral envs, stepped by coral's actors in the topology chosen.

    The Gymnasium VectorEnv protocol (reset/step on every env at once, with
    batch_size == num_envs, the default) and EnvPool's asynchronous one
    (async_reset/send/recv on batches of batch_size envs, for pool sampling).
    With gymnasium importable this is a ``gymnasium.vector.VectorEnv``, so
    Gymnasium's vector wrappers take it; metadata["autoreset_mode"] is an
    AutoresetMode either way.

    infos holds "env_id" and "failed" (each with its "_" mask; coral_infos=False
    leaves them out, for a batch of every env, and then gives same-step
    final_obs/final_info only on a step where an episode ended), and coral's
    episode statistics {"r": returns, "l": lengths} of the envs whose episode
    ended under `stats_key` ("coral_episode"; None leaves them out), a key of
    its own so that Gymnasium's RecordEpisodeStatistics ("episode") can wrap it.

    render_mode="rgb_array" (a C++ env that renders: docs/envs.md) makes render()
    return a tuple of (height, width, 3) uint8 frames, env 0 first, as
    Gymnasium's SyncVectorEnv does, so that RecordVideo-style wrappers take it.
    An env registered from Python renders as its instances do: render_mode is
    theirs, and render() returns what their render() does.

    Multi-agent envs (several agent slots per env: a C++ env such as tictactoe or
    population, or a PettingZoo-style env given to coral.register) have one row per
    slot: num_envs is then the number of rows, make_vec's num_envs times
    agents_per_env, and row r is slot r % agents_per_env of env r // agents_per_env.
    infos["active"] (bool per row) says which rows hold an agent in play: an
    inactive row's observation means nothing and its action is ignored; its
    reward and flags are 0 unless its agent's episode ended on this step (a
    player waiting for its turn learns the game's outcome). Episode statistics
    are per agent episode. reset_mask and per-env seeds are per env: the rows
    of one env reset together, and seeds are one per env.

    Action masks: for an env that masks actions, infos["action_mask"] holds each
    row's legal actions (int8, 1 = legal; one column per value of each discrete
    action component, Gymnasium's convention, so that
    action_space.sample(mask=...) takes a row's), valid for the active rows. An
    action that an active row's mask rules out is refused with a ValueError
    naming the env, row and action, before anything reaches the env;
    enforce_masks=False passes such actions on to the env, which handles them
    as it documents (tictactoe and connect4: the mover loses the game).

    Arrays returned are views of coral's rows, valid until the next call to
    step, send, reset, async_reset or close; pass copy=True for copies. A
    batch of envs that are not consecutive rows (pool batches drawn from
    several groups) is gathered into new arrays.
    """

    def __init__(self, env_id, num_envs, *, batch_size=None, num_threads=None, topology=None, seed=0,
                 autoreset_mode="next_step", copy=False, envs_per_group=None, executor="threads", spin_us=50,
                 stats_key="coral_episode", coral_infos=True, render_mode=None, enforce_masks=True, **env_args):
        if not isinstance(env_id, str):
            raise ValueError(f"env_id: {env_id!r} is invalid: must be an env name (see coral.env_names())")
        num_envs = _count("num_envs", num_envs)
        batch_size = _count("batch_size", batch_size, allow_none=True)
        threads = _count("num_threads", num_threads, allow_none=True) or 1
        # seed=None: Gymnasium's way, no env is seeded until reset(seed=...) (a C++ env, which
        # always takes a seed, gets one from entropy).
        self._seeded = seed is not None
        seed = _seed(seed) if seed is not None else int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
        if not isinstance(autoreset_mode, (str, AutoresetMode)) or autoreset_mode not in AUTORESET_MODES:
            raise ValueError(f"autoreset_mode: {autoreset_mode!r} is invalid (allowed: next_step, same_step, "
                             "disabled, or AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, "
                             "AutoresetMode.DISABLED)")
        autoreset_mode = AUTORESET_MODES[autoreset_mode]
        if stats_key is not None and (not isinstance(stats_key, str) or not stats_key
                                      or stats_key.lstrip("_") in OWN_INFO_KEYS):
            raise ValueError(f"stats_key: {stats_key!r} is invalid: must be None or a non-empty string other than "
                             f"{', '.join(OWN_INFO_KEYS)}")
        if topology is None:
            topology = "sync" if batch_size is None or batch_size == num_envs else "pool"
        if topology not in TOPOLOGIES:
            raise ValueError(f"topology: {topology!r} is invalid (allowed: {', '.join(TOPOLOGIES)})")
        if batch_size is None:
            batch_size = {"sync": num_envs, "double-buffer": num_envs // 2, "pool": max(1, num_envs // 4)}[topology]
        if not isinstance(coral_infos, (bool, np.bool_)):
            raise ValueError(f"coral_infos: {coral_infos!r} is invalid: must be True or False")
        if not isinstance(enforce_masks, (bool, np.bool_)):
            raise ValueError(f"enforce_masks: {enforce_masks!r} is invalid: must be True or False")
        if not coral_infos and batch_size != num_envs:
            raise ValueError("coral_infos: False needs batch_size=num_envs (a pool batch's infos[\"env_id\"] "
                             "says which envs it holds)")
        if envs_per_group is None:
            envs_per_group = self._default_group(topology, num_envs, batch_size, threads)
        envs_per_group = _count("envs_per_group", envs_per_group)
        spin_us = _count("spin_us", spin_us, minimum=0, maximum=MAX_INT64)
        args = [(str(k), _env_arg_text(k, v)) for k, v in env_args.items()]

        try:
            with _pyenv.first_spaces(self._seeded) as seen:
                self._engine = _coral._VecEnv(env_id, num_envs, batch_size, threads, topology, seed,
                                              ENGINE_MODES[autoreset_mode],
                                              envs_per_group, executor, spin_us, args)
        except ValueError as e:
            raise ValueError(_python_names(str(e))) from None
        # One row per agent slot: Gymnasium's num_envs is the rows' count (its wrappers size arrays by it).
        self.agents_per_env = agents = self._engine.agents_per_env
        self._instances = num_envs
        num_envs *= agents
        self.num_envs = num_envs
        self.batch_size = self._engine.batch_size * agents
        self._engine.set_enforce_masks(bool(enforce_masks))
        # Rows of an env with agent slots or action masks: which are in play, which actions are legal.
        self._agent_infos = {}
        self.copy = bool(copy)
        self.metadata = {"autoreset_mode": autoreset_mode, "env_id": env_id, "topology": topology}
        self.spec = None
        self._adapters = seen.adapters or None  # a Python env's: where its infos are
        self.render_mode = self._resolve_render_mode(env_id, render_mode, args)
        self.closed = False
        self._seed = seed
        self._same_step = autoreset_mode == AutoresetMode.SAME_STEP
        self._stats_key = stats_key
        self._coral_infos = bool(coral_infos)
        if seen.spaces is not None:
            # A Python env: its own spaces, with the dtypes and starts coral's C++ spaces do not hold.
            self.single_observation_space, self.single_action_space, obs_desc, act_desc = seen.spaces
        else:
            obs_desc, act_desc = self._engine.observation_space, self._engine.action_space
            self.single_observation_space = _spaces.from_desc(obs_desc)
            self.single_action_space = _spaces.from_desc(act_desc)
        self._obs_layout = _spaces.ObservationLayout(obs_desc)
        # Gymnasium stacks final observations that are arrays; a Discrete one is a scalar, one entry per env.
        self._final_per_env = self._obs_layout.structured or obs_desc[0] == "discrete"
        self._action_layout = _spaces.ActionLayout(act_desc)
        starts = _spaces.discrete_starts(act_desc)
        if any(starts):
            self._engine.set_action_starts(starts, repr(self.single_action_space))
        self.observation_space = _spaces.batch(self.single_observation_space, num_envs)
        self.action_space = _spaces.batch(self.single_action_space, num_envs)
        self._simple_actions = self._action_layout.kind in ("box", "discrete", "multi_discrete")

        v = self._engine.views()
        self._v = v
        self._obs_all = self._obs_layout.view(v["observations"])
        self._final_all = self._obs_layout.view(v["final_observations"])
        self._all_ids = np.arange(num_envs, dtype=np.int32)
        self._all_ids.flags.writeable = False
        self._all_true = np.ones(num_envs, dtype=bool)
        self._all_true.flags.writeable = False
        if agents > 1:
            self._agent_infos["active"] = v["active"]
        if self._engine.has_action_masks:
            self._agent_infos["action_mask"] = v["action_masks"]
        self._count = 0
        self._started = False
        # A whole-batch step whose outputs are all views returns the same
        # view objects every step: it runs in C++ from actions to outputs.
        # Same-step final_obs of a Dict or Tuple is built per step, and so
        # are Gymnasium's infos (final_obs only on a step that ended an episode).
        # So are a Python env's infos.
        self._fast = (self.batch_size == num_envs and self._simple_actions and self._obs_layout.all_views
                      and not self.copy and not (self._same_step and (self._final_per_env
                                                                       or not self._coral_infos))
                      and self._adapters is None)
        if self._fast:
            every = slice(None)
            ended = v["ended"]
            infos = {}
            if self._coral_infos:
                infos = {"env_id": self._all_ids, "_env_id": self._all_true,
                         "failed": v["failed"], "_failed": self._all_true}
            stats = self._stats(v["episode_returns"], v["episode_lengths"], ended)
            infos.update(stats)
            self._put_agent_infos(infos, every)
            if self._same_step:
                infos["final_obs"] = self._final_all
                infos["_final_obs"] = ended
                infos["final_info"] = stats
                infos["_final_info"] = ended
            self._engine.set_outputs(self._obs_all[every], v["rewards"], v["terminated"], v["truncated"], infos)

    @staticmethod
    def _default_group(topology, num_envs, batch_size, threads):
        # A pool batch of one group is consecutive rows (views, not copies);
        # sync and double-buffer split each batch across the threads.
        if topology == "pool":
            return batch_size if num_envs % batch_size == 0 else 1
        if batch_size % threads == 0:
            return batch_size // threads
        return 1

    # --- the Gymnasium protocol -------------------------------------------

    def reset(self, *, seed=None, options=None):
        """Starts new episodes: in every env, or those of options["reset_mask"].
        An int seed rebuilds every env seeded from it, and seeds np_random, as Gymnasium's vector
        envs do; a partial reset, or a list of seeds (one per env), seeds a Python env's instances
        in place (env i: seed + i, or seed[i])."""
        self._check_open()
        mask = None
        if options is not None:
            if not isinstance(options, dict) or set(options) - {"reset_mask"}:
                raise ValueError(f"options: {options!r} is invalid (allowed: {{'reset_mask': bool array}})")
            mask = self._env_rows_mask(_reset_mask(options["reset_mask"], self.num_envs))
        self._check_sync("reset")
        holding = self._engine.holding
        per_env = isinstance(seed, (list, tuple)) or (seed is not None and mask is not None and not mask.all())
        if per_env:
            self._seed_in_place(seed, mask, holding)
            seed = None
        elif seed is not None:
            seed = _seed(seed)
        if seed is None and holding:
            commands = self._v["commands"]
            if mask is None:
                commands[:] = 1
            else:
                commands[mask] = 1
                commands[~mask] |= 2
            self._engine.send()
        elif mask is not None and not mask.all():
            raise ValueError("reset_mask: a partial reset needs a running env (reset it fully first)")
        else:
            if seed is not None:
                self._seed = seed
                self._seeded = True
                super().reset(seed=seed)
            self._start(seed)
        self._count = self._engine.recv()
        obs = self._observations(slice(None))
        infos = {"env_id": self._ids(), "_env_id": self._all_true} if self._coral_infos else {}
        self._put_agent_infos(infos, slice(None))
        self._add_env_infos(infos, self._ids(), "info")
        if self.copy:
            obs, infos = _copy(obs), _copy(infos)
        return obs, infos

    def step(self, actions):
        """One step of every env: (obs, rewards, terminations, truncations, infos)."""
        if self._fast and not self.closed:
            return self._engine.fast_step(actions)
        self._check_open()
        self._check_sync("step")
        if not self._engine.holding:
            self._check_closed_meanwhile()
            raise RuntimeError("step: no batch in hand: reset() the env first (also after a KeyboardInterrupt "
                               "or an error inside step)")
        if self._simple_actions:
            self._count = self._engine.step(actions)
        else:
            d, c = self._action_layout.flatten_batch(actions, self.num_envs)
            self._engine.put_flat(d, c)
            self._engine.send()
            self._count = self._engine.recv()
        return self._outputs(slice(None))

    # --- EnvPool's asynchronous protocol -----------------------------------

    def async_reset(self, *, seed=None):
        """(Re)starts every env; recv() then returns the first batches."""
        self._check_open()
        if seed is not None:
            self._seed = _seed(seed)
            self._seeded = True
        self._start(self._seed)
        self._count = 0

    def send(self, actions, env_id=None):
        """Actions for the envs of the last recv(), in env_id's order (default: that batch's)."""
        self._check_open()
        if not self._engine.holding:
            self._check_closed_meanwhile()
            raise RuntimeError("send: no batch in hand; call recv() first")
        if self._simple_actions:
            self._engine.put_actions(actions, env_id)
        else:
            d, c = self._action_layout.flatten_batch(actions, self._count)
            self._engine.put_flat(d, c, env_id)
        self._engine.send()

    def recv(self):
        """The next batch_size envs: (obs, rewards, terminations, truncations, infos); infos["env_id"] says which."""
        self._check_open()
        if not self._started:
            raise RuntimeError("recv: call async_reset() first")
        self._count = self._engine.recv()
        return self._outputs(self._rows())

    # --- a Python env's instances (Gymnasium's SyncVectorEnv has these) -----

    def call(self, name, *args, **kwargs):
        """Calls method `name` of every env (an attribute's value if it is not callable): a tuple,
        env 0 first. Python envs only, while no env steps (sync, or before the first reset)."""
        results = []
        for env in self._env_instances("call"):
            attribute = getattr(env, name)
            results.append(attribute(*args, **kwargs) if callable(attribute) else attribute)
        return tuple(results)

    def get_attr(self, name):
        """Attribute `name` of every env: a tuple, env 0 first (as call(), without calling)."""
        return tuple(getattr(env, name) for env in self._env_instances("get_attr"))

    def set_attr(self, name, values):
        """Sets attribute `name` of every env: to values[i] for env i, or to `values` in each if it
        is not a list or tuple. A seeded reset builds the envs anew, without it."""
        envs = self._env_instances("set_attr")
        if not isinstance(values, (list, tuple)):
            values = [values] * len(envs)
        if len(values) != len(envs):
            raise ValueError(f"values: {len(values)} values for {len(envs)} envs")
        for env, value in zip(envs, values):
            setattr(env, name, value)

    @property
    def envs(self):
        """A Python env's instances, env 0 first (Gymnasium's SyncVectorEnv.envs): the objects coral
        steps, so read them while no env steps (sync, or before the first reset). A seeded reset
        builds new ones. A C++ env has none: AttributeError, so that hasattr(env, "envs") is False."""
        if self._adapters is None:
            raise AttributeError(f"envs: {self.metadata['env_id']!r} is a C++ env; only envs registered from "
                                 "Python (coral.register) have instances to reach")
        return self._env_instances("envs")

    def _env_instances(self, what):
        self._check_open()
        if self._adapters is None:
            raise RuntimeError(f"{what}: {self.metadata['env_id']!r} is a C++ env; only envs registered from "
                               "Python (coral.register) have instances to reach")
        if self._started and self.batch_size != self.num_envs:
            raise RuntimeError(f"{what}: the envs of a pool may be stepping; use batch_size=num_envs")
        return [self._adapters[i].env for i in range(self._instances)]

    # --- the rest -----------------------------------------------------------

    def render(self):
        """The frames of every env, env 0 first (a tuple; one per env, not per agent slot), as
        Gymnasium's SyncVectorEnv gives them:
        for a C++ env with render_mode="rgb_array", (height, width, 3) uint8 arrays (new ones each
        call) of each env as the last reset or step left it; for a Python env, what its instances'
        render() return. None for a C++ env made with render_mode=None. While no env steps: after
        reset() with batch_size=num_envs."""
        self._check_open()
        if self._adapters is not None:
            return tuple(env.render() for env in self._env_instances("render"))
        if self.render_mode is None:
            return None
        if self.batch_size != self.num_envs:
            raise RuntimeError("render: the envs of a pool may be stepping; use batch_size=num_envs")
        if not self._engine.holding:
            self._check_closed_meanwhile()
            raise RuntimeError("render: no batch in hand: reset() the env first")
        return tuple(self._engine.render(list(range(self._instances))))

    def _resolve_render_mode(self, env_id, render_mode, env_args):
        """The vector env's render_mode, and its metadata's render_modes and render_fps."""
        if self._adapters is not None:
            # A Python env renders as its instances were made to (Gymnasium's SyncVectorEnv).
            own = getattr(self._adapters[0].env, "render_mode", None)
            if render_mode is not None and render_mode != own:
                raise ValueError(f"render_mode: {render_mode!r} is invalid for {env_id!r}, a Python env: it renders "
                                 f"as its instances do (render_mode {own!r}); make them with the render_mode wanted")
            metadata = getattr(self._adapters[0].env, "metadata", None) or {}
            for key in ("render_modes", "render_fps"):
                if key in metadata:
                    self.metadata[key] = metadata[key]
            return own
        if render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode: {render_mode!r} is invalid (allowed: None, 'rgb_array')")
        renders = _coral.env_renders(env_id, env_args)
        self.metadata["render_modes"] = ["rgb_array"] if renders else []
        self.metadata["render_fps"] = RENDER_FPS
        if render_mode is not None and not renders:
            raise ValueError(f"render_mode: {env_id!r} does not render (docs/envs.md lists the envs that do)")
        return render_mode

    def close_extras(self, **kwargs):
        """Stops coral's actors (close() calls this once, then marks the env closed)."""
        engine = getattr(self, "_engine", None)  # absent if __init__ raised
        if engine is not None:
            engine.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self):
        return (f"coral.VectorEnv({self.metadata['env_id']!r}, num_envs={self.num_envs}, "
                f"batch_size={self.batch_size}, topology={self.metadata['topology']!r})")

    @property
    def np_random_seed(self):
        """For a Python env, each env's np_random_seed (a tuple, env 0 first), as Gymnasium's
        SyncVectorEnv gives it; for a C++ env (or a pool's stepping envs), the seed of the vector
        env's own np_random."""
        if self._adapters is not None and not (self._started and self.batch_size != self.num_envs):
            envs = [self._adapters[i].env for i in range(self._instances)]
            if all(hasattr(env, "np_random_seed") for env in envs):
                return tuple(env.np_random_seed for env in envs)
        return super().np_random_seed

    @property
    def env_steps(self):
        """Env steps coral took since the last (re)start."""
        return self._engine.env_steps

    # --- internals ----------------------------------------------------------

    def _check_open(self):
        if self.closed:
            raise RuntimeError("the vector env is closed")

    def _check_closed_meanwhile(self):
        # No batch in hand: a close() from another thread may be why. The
        # engine marks itself closed before it drops the batch, and
        # self.closed is set only when close() returns. Read only here, off
        # the path of every step.
        if self._engine.closed:
            raise RuntimeError("the vector env is closed")

    def _check_sync(self, what):
        if self.batch_size != self.num_envs:
            raise RuntimeError(
                f"{what}: this env returns batches of {self.batch_size} of {self.num_envs} envs; "
                "use async_reset/send/recv (or batch_size=num_envs)")

    def _seed_in_place(self, seed, mask, holding):
        """The next reset of each env that resets (all, or mask's) takes its own seed."""
        if self._adapters is None or (self._started and not holding):
            raise ValueError("seed: a list of seeds, or a seed with a partial reset_mask, seeds envs in place: "
                             "Python envs only (coral.register), before the first reset or between steps; an "
                             "int seed without a mask rebuilds every env")
        if isinstance(seed, (list, tuple)):
            if len(seed) != self._instances:
                raise ValueError(f"seed: {len(seed)} seeds for {self._instances} envs")
            seeds = [None if s is None else _seed(s) for s in seed]
        else:
            seeds = [_seed(seed) + i for i in range(self._instances)]
        for i, s in enumerate(seeds):
            if mask is None or mask[i * self.agents_per_env]:
                # Taken by the env's next reset: the reset command sent below, or the first reset of
                # the envs built with the vector env (nothing steps them before that).
                self._adapters[i].seed = s
        self._seeded = True

    def _env_rows_mask(self, mask):
        """A reset mask over rows, checked to take or leave each env's rows together."""
        if self.agents_per_env == 1:
            return mask
        per_env = mask.reshape(self._instances, self.agents_per_env)
        mixed = np.flatnonzero(per_env.any(axis=1) & ~per_env.all(axis=1))
        if mixed.size:
            e = int(mixed[0])
            raise ValueError(f"`options['reset_mask']`: env {e}'s rows {e * self.agents_per_env}.."
                             f"{(e + 1) * self.agents_per_env - 1} differ; the rows of an env (its agent slots) "
                             "reset together")
        return mask

    def _put_agent_infos(self, infos, rows):
        """infos["active"] and infos["action_mask"] (with their "_" masks) of `rows`, for an env that has them."""
        for key, column in self._agent_infos.items():
            infos[key] = column[rows]
            infos["_" + key] = self._all_true[:len(infos[key])]

    def _ids(self):
        if self._count == self.num_envs:
            return self._all_ids
        return self._v["ids"][:self._count].copy()

    def _rows(self):
        """What selects the batch's rows: a slice when they are consecutive, else the ids."""
        n = self._count
        ids = self._v["ids"]
        first = int(ids[0])
        if int(ids[n - 1]) - first == n - 1:
            return slice(first, first + n)
        return ids[:n].copy()

    def _observations(self, rows, final=False):
        if self._obs_layout.all_views:
            return _take(self._final_all if final else self._obs_all, rows)
        flat = self._v["final_observations" if final else "observations"][rows]
        return self._obs_layout.view(flat)

    def _start(self, seed):
        # Starting anew builds new envs: a Python env's adapters are new too.
        with _pyenv.first_spaces(self._seeded) as seen:
            self._engine.start(seed)
        if self._adapters is not None:
            self._adapters = seen.adapters or self._adapters
        self._started = True

    def _add_env_infos(self, infos, ids, which, only=None):
        """A Python env's own info dicts (adapter.<which>) into `infos`, Gymnasium's way: each
        key an array over the batch with its "_key" mask; coral's own keys win a clash."""
        if self._adapters is None:
            return
        n = len(ids)
        env_infos = {}
        agents = self.agents_per_env
        for k, row in enumerate(ids):
            if only is not None and not only[k]:
                continue
            info = getattr(self._adapters[int(row) // agents], which)
            if isinstance(info, list):  # an env with agent slots: one info per slot
                info = info[int(row) % agents]
            if info:
                _put_info(env_infos, info, k, n)
        for key, value in env_infos.items():
            infos.setdefault(key, value)

    def _final_observations(self, rows, ended):
        """Same-step final observations: one entry per env (None where no episode ended), as
        Gymnasium gives them; for a Box, the stacked (n, *shape) array whose row i is env i's."""
        final = self._observations(rows, final=True)
        if not self._final_per_env:
            return final
        per_env = np.full(len(ended), None, dtype=object)
        for i in np.flatnonzero(ended):
            one = _take(final, int(i))
            per_env[i] = one.item() if isinstance(one, np.generic) else one  # a Discrete one as a Python int
        return per_env

    def _stats(self, returns, lengths, ended):
        """coral's episode statistics as infos entries: none without a stats_key."""
        if self._stats_key is None:
            return {}
        return {self._stats_key: {"r": returns, "l": lengths}, "_" + self._stats_key: ended}

    def _outputs(self, rows):
        v = self._v
        n = self._count
        ended = v["ended"][:n]
        obs = self._observations(rows)
        returns = v["episode_returns"][rows]
        lengths = v["episode_lengths"][rows]
        mask = self._all_true[:n]
        ids = self._ids()
        infos = {}
        if self._coral_infos:
            infos = {"env_id": ids, "_env_id": mask, "failed": v["failed"][rows], "_failed": mask}
        stats = self._stats(returns, lengths, ended)
        infos.update(stats)
        self._put_agent_infos(infos, rows)
        # Gymnasium's infos (coral_infos=False) have final_obs only when an episode ended.
        if self._same_step and (self._coral_infos or ended.any()):
            infos["final_obs"] = self._final_observations(rows, ended)
            infos["_final_obs"] = ended
            infos["final_info"] = dict(stats)
            infos["_final_info"] = ended
            self._add_env_infos(infos["final_info"], ids, "final_info", only=ended)
        self._add_env_infos(infos, ids, "info")
        out = (obs, v["rewards"][rows], v["terminated"][rows], v["truncated"][rows], infos)
        if self.copy:
            out = _copy(out)
        return out


_INFO_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64)}


def _put_info(infos, info, k, n):
    """Entry k of a batch of n: every key of `info` as an array with its "_key" mask (Python
    ints, floats and bools as int64, float64 and bool arrays, dicts recursively, anything else
    in an object array)."""
    for key, value in info.items():
        if isinstance(value, dict):
            if not isinstance(infos.setdefault(key, {}), dict):
                continue  # another env gave a value under this key, not a dict
            _put_info(infos[key], value, k, n)
        else:
            kind = _INFO_DTYPES.get(type(value), np.dtype(object))
            if key not in infos:
                infos[key] = np.zeros(n, dtype=kind) if kind != object else np.full(n, None, dtype=object)
            elif isinstance(infos[key], dict):
                continue
            elif infos[key].dtype != kind and infos[key].dtype != object:
                infos[key] = infos[key].astype(object)  # envs disagree on the type: keep each as given
            infos[key][k] = value
        infos.setdefault("_" + key, np.zeros(n, dtype=bool))[k] = True


def _reset_mask(mask, num_envs):
    """options["reset_mask"], checked: a bool numpy array of shape (num_envs,) with a True in it."""
    where = "`options['reset_mask']`"
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"{where} must be a numpy array, got {type(mask)}")
    if mask.shape != (num_envs,):
        raise ValueError(f"{where} must have shape `({num_envs},)`, got {mask.shape}")
    if mask.dtype != np.bool_:
        raise TypeError(f"{where} must have `dtype=np.bool_`, got {mask.dtype}")
    if not mask.any():
        raise ValueError(f"{where} must contain a boolean array with at least one True value, got reset_mask={mask}")
    return mask


def _take(structured, rows):
    if isinstance(structured, dict):
        return {k: _take(x, rows) for k, x in structured.items()}
    if isinstance(structured, tuple):
        return tuple(_take(x, rows) for x in structured)
    return structured[rows]


def _copy(value):
    if isinstance(value, dict):
        return {k: _copy(x) for k, x in value.items()}
    if isinstance(value, tuple):
        return tuple(_copy(x) for x in value)
    if isinstance(value, np.ndarray):
        if value.dtype == object:  # per-env final observations: copy each one
            out = np.empty_like(value)
            for i, x in enumerate(value):
                out[i] = _copy(x)
            return out
        return value.copy()
    return value
