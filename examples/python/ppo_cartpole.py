#!/usr/bin/env python3
"""PPO on coral's vector env, in one file (PyTorch), in the manner of CleanRL's ppo.py.

    PYTHONPATH=build/release/python examples/python/ppo_cartpole.py --num-envs 8 --seed 1

It stops as soon as the mean return of the last 100 finished episodes reaches the solved
threshold (475 for cartpole) and ends with one JSON line:
    {"solved": ..., "env_steps": ..., "wall_seconds": ..., "mean_return": ..., "episodes": ...}
exit code 0 if solved, 1 if not. `--vec pure` trains on bench/python/pure_cartpole.py's pure-Python
vector env instead (same dynamics, same protocol), without the coral module.

The vector env's arrays are views into coral's buffers, valid until the next step/reset/close:
everything kept across steps is copied into the rollout storage below.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from collections import deque

import numpy as np
import torch
from torch import nn

SOLVED_RETURN = {"cartpole": 475.0}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="PPO on a coral vector env until it is solved")
    parser.add_argument("--env", default="cartpole", help="env name (default cartpole)")
    parser.add_argument("--vec", choices=("coral", "pure"), default="coral",
                        help="coral: coral.make_vec; pure: the pure-Python vector env (cartpole only)")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--total-steps", type=int, default=500_000, help="env steps at most")
    parser.add_argument("--rollout-steps", type=int, default=128, help="steps per env per rollout")
    parser.add_argument("--lr", type=float, default=5e-3, help="Adam step size at the start")
    parser.add_argument("--anneal-lr", type=int, choices=(0, 1), default=1, help="1: lr falls linearly to 0")
    parser.add_argument("--epochs", type=int, default=4, help="passes over each rollout")
    parser.add_argument("--minibatches", type=int, default=4, help="minibatches per pass")
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--gae-lambda", type=float, default=0.95)
    parser.add_argument("--clip", type=float, default=0.2, help="policy ratio clip")
    parser.add_argument("--ent-coef", type=float, default=0.0)
    parser.add_argument("--vf-coef", type=float, default=0.5)
    parser.add_argument("--max-grad-norm", type=float, default=0.5)
    parser.add_argument("--hidden", type=int, default=64, help="width of the two tanh layers")
    parser.add_argument("--window", type=int, default=100, help="finished episodes the solved mean is over")
    parser.add_argument("--solved-return", type=float, default=None,
                        help="mean return that counts as solved (default: 475 for cartpole)")
    parser.add_argument("--quiet", action="store_true", help="print only the final JSON line")
    args = parser.parse_args(argv)
    if args.solved_return is None:
        if args.env not in SOLVED_RETURN:
            parser.error(f"--solved-return is needed for --env {args.env} (known: {', '.join(SOLVED_RETURN)})")
        args.solved_return = SOLVED_RETURN[args.env]
    if args.vec == "pure" and args.env != "cartpole":
        parser.error(f"--vec pure has cartpole only, got --env {args.env}")
    return args


def make_env(args):
    if args.vec == "pure":
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench" / "python"))
        from pure_cartpole import PurePythonVecEnv
        return PurePythonVecEnv(args.num_envs, seed=args.seed)
    import coral
    return coral.make_vec(args.env, args.num_envs)


def orthogonal(rows, cols, gain):
    weight = torch.empty(rows, cols)
    nn.init.orthogonal_(weight, gain)
    return weight


class ActorCritic(nn.Module):
    """An actor and a critic, each two tanh layers of `hidden` units, with separate weights but
    evaluated together: both first layers are one matrix product, both second layers one batched
    product. A forward pass is 6 kernels instead of 10 and no nn.Module call per layer, which
    at 8 rows is most of its cost."""

    def __init__(self, obs_dim, num_actions, hidden):
        super().__init__()
        root2 = 2 ** 0.5
        self.hidden = hidden
        # Weights are stored (in, out); orthogonal init as CleanRL: gain sqrt(2) for the hidden
        # layers, 0.01 for the policy head (near-uniform first policy), 1 for the value head.
        self.w1 = nn.Parameter(torch.cat([orthogonal(hidden, obs_dim, root2).T for _ in range(2)], dim=1))
        self.b1 = nn.Parameter(torch.zeros(2 * hidden))
        self.w2 = nn.Parameter(torch.stack([orthogonal(hidden, hidden, root2).T for _ in range(2)]))
        self.b2 = nn.Parameter(torch.zeros(2, 1, hidden))
        self.w_policy = nn.Parameter(orthogonal(num_actions, hidden, 0.01).T.contiguous())
        self.b_policy = nn.Parameter(torch.zeros(num_actions))
        self.w_value = nn.Parameter(orthogonal(1, hidden, 1.0).T.contiguous())
        self.b_value = nn.Parameter(torch.zeros(1))

    def forward(self, obs):
        """Policy logits (B, num_actions) and values (B,) of a batch of observations (B, obs_dim)."""
        h1 = torch.tanh(torch.addmm(self.b1, obs, self.w1))            # (B, 2H): actor | critic
        h1 = h1.view(-1, 2, self.hidden).transpose(0, 1)               # (2, B, H)
        h2 = torch.tanh(torch.baddbmm(self.b2, h1, self.w2))           # (2, B, H)
        logits = torch.addmm(self.b_policy, h2[0], self.w_policy)
        values = torch.addmm(self.b_value, h2[1], self.w_value).squeeze(-1)
        return logits, values


def sample_actions(logits):
    """Actions drawn from softmax(logits) by the Gumbel-max trick, and their log-probabilities
    (cheaper per step than building a torch.distributions.Categorical)."""
    log_probs = torch.log_softmax(logits, dim=-1)
    gumbel = -torch.log(-torch.log(torch.rand_like(logits)))
    actions = torch.argmax(log_probs + gumbel, dim=-1)
    return actions, log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)


def clip_grad_norm(parameters, max_norm):
    """Scale the gradients so that their global L2 norm is at most `max_norm` (as
    nn.utils.clip_grad_norm_, with one norm over all of them instead of one per tensor)."""
    grads = [p.grad for p in parameters]
    total = torch.cat([g.reshape(-1) for g in grads]).norm()
    scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(scale)


def compute_advantages(rewards, values, ends, bootstrap, gamma, gae_lambda):
    """Generalized advantage estimates (T, N). `values` has T + 1 rows: row t + 1 is the value of
    the observation that followed step t. `ends[t]` cuts the GAE chain after step t; `bootstrap[t]`
    says whether the next row's value counts in step t's target."""
    t_len = rewards.shape[0]
    advantages = np.zeros_like(rewards)
    last = np.zeros_like(rewards[0])
    for t in reversed(range(t_len)):
        delta = rewards[t] + gamma * values[t + 1] * bootstrap[t] - values[t]
        last = delta + gamma * gae_lambda * (1.0 - ends[t]) * last
        advantages[t] = last
    return advantages


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    start = time.perf_counter()

    env = make_env(args)
    n, t_len = env.num_envs, args.rollout_steps
    obs_dim = int(np.prod(env.single_observation_space.shape))
    num_actions = int(env.single_action_space.n)
    # coral's metadata holds an AutoresetMode, the pure-Python twin's a string.
    mode = env.metadata.get("autoreset_mode", "next_step")
    next_step_mode = str(getattr(mode, "name", mode)).lower() == "next_step"
    agent = ActorCritic(obs_dim, num_actions, args.hidden)
    parameters = list(agent.parameters())
    optimizer = torch.optim.Adam(parameters, lr=args.lr, eps=1e-5, foreach=True)

    # Rollout storage, in numpy so that a row is written by one cheap copy straight out of the
    # env's buffers (which the next step overwrites). Row t of obs is the observation acted on at
    # step t; row t_len is the observation after the rollout, row 0 of the next one.
    obs_buf = np.zeros((t_len + 1, n, obs_dim), dtype=np.float32)
    actions_buf = np.zeros((t_len, n), dtype=np.int64)
    logprobs_buf = np.zeros((t_len, n), dtype=np.float32)
    values_buf = np.zeros((t_len + 1, n), dtype=np.float32)
    rewards_buf = np.zeros((t_len, n), dtype=np.float32)
    # ends[t]: the episode ended at step t (terminated or truncated), cutting the GAE chain.
    # bootstrap[t]: the value of obs row t + 1 counts in step t's target.
    # valid[t]: row t is a real transition (see the next_step note in the loop).
    ends_buf = np.zeros((t_len, n), dtype=np.float32)
    bootstrap_buf = np.zeros((t_len, n), dtype=np.float32)
    valid_buf = np.ones((t_len, n), dtype=np.bool_)

    obs, _ = env.reset(seed=args.seed)
    obs_buf[t_len] = obs.reshape(n, obs_dim)
    prev_ended = np.zeros(n, dtype=np.bool_)
    recent_returns = deque(maxlen=args.window)
    episodes = 0
    env_steps = 0
    solved = False
    num_rollouts = max(1, args.total_steps // (n * t_len))
    mean_return = float("nan")

    for rollout in range(num_rollouts):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = args.lr * (1.0 - rollout / num_rollouts)
        obs_buf[0] = obs_buf[t_len]
        for t in range(t_len):
            with torch.no_grad():
                logits, value = agent(torch.from_numpy(obs_buf[t]))
                action, logprob = sample_actions(logits)
            actions_buf[t] = action.numpy()
            logprobs_buf[t] = logprob.numpy()
            values_buf[t] = value.numpy()
            obs, rewards, terminations, truncations, infos = env.step(actions_buf[t])
            env_steps += n
            obs_buf[t + 1] = obs.reshape(n, obs_dim)
            rewards_buf[t] = rewards
            ended = terminations | truncations
            ends_buf[t] = ended
            if next_step_mode:
                # next_step autoreset: an env whose episode ended on the previous step resets on
                # this one; its action is ignored, its reward is 0, and the row pairs the old
                # episode's last observation with the new one's first: no transition, so it is
                # kept out of the loss. The flags that say so are the *previous* step's, which
                # is why "done" must come from the step before, as in CleanRL.
                valid_buf[t] = ~prev_ended
                # obs row t + 1 is the ended episode's last observation, so its value is the right
                # bootstrap after a truncation; only a termination forbids it.
                bootstrap_buf[t] = ~terminations
                prev_ended = ended
            else:
                # same_step: obs row t + 1 is already the next episode's first observation; a
                # truncated episode is bootstrapped from its final observation through the reward.
                bootstrap_buf[t] = ~ended
                cut = truncations & ~terminations
                if cut.any():
                    final_obs = torch.tensor(infos["final_obs"][cut].reshape(-1, obs_dim))
                    with torch.no_grad():
                        final_values = agent(final_obs)[1].numpy()
                    rewards_buf[t, cut] += args.gamma * final_values
            finished = infos["_coral_episode"]
            if finished.any():
                for r in infos["coral_episode"]["r"][finished]:
                    recent_returns.append(float(r))
                    episodes += 1
                if len(recent_returns) == args.window:
                    mean_return = sum(recent_returns) / args.window
                    if mean_return >= args.solved_return:
                        solved = True
                        break
        if solved:
            break

        with torch.no_grad():
            values_buf[t_len] = agent(torch.from_numpy(obs_buf[t_len]))[1].numpy()
        advantages = compute_advantages(rewards_buf, values_buf, ends_buf, bootstrap_buf, args.gamma, args.gae_lambda)
        returns = advantages + values_buf[:t_len]

        valid = valid_buf.reshape(-1)
        b_obs = torch.from_numpy(obs_buf[:t_len].reshape(-1, obs_dim)[valid])
        b_actions = torch.from_numpy(actions_buf.reshape(-1)[valid])
        b_logprobs = torch.from_numpy(logprobs_buf.reshape(-1)[valid])
        b_advantages = torch.from_numpy(advantages.reshape(-1)[valid])
        b_returns = torch.from_numpy(returns.reshape(-1)[valid])
        batch = b_obs.shape[0]
        minibatch = max(1, -(-batch // args.minibatches))
        for _ in range(args.epochs):
            order = torch.randperm(batch)
            for lo in range(0, batch, minibatch):
                idx = order[lo:lo + minibatch]
                logits, values = agent(b_obs[idx])
                log_probs = torch.log_softmax(logits, dim=-1)
                new_logprob = log_probs.gather(-1, b_actions[idx].unsqueeze(-1)).squeeze(-1)
                adv = b_advantages[idx]
                if adv.numel() > 1:
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                ratio = (new_logprob - b_logprobs[idx]).exp()
                policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip, 1 + args.clip)).mean()
                value_loss = 0.5 * (values - b_returns[idx]).pow(2).mean()
                loss = policy_loss + args.vf_coef * value_loss
                if args.ent_coef:
                    loss = loss - args.ent_coef * -(log_probs.exp() * log_probs).sum(-1).mean()
                optimizer.zero_grad()
                loss.backward()
                clip_grad_norm(parameters, args.max_grad_norm)
                optimizer.step()

        if not args.quiet and (rollout + 1) % 10 == 0:
            shown = sum(recent_returns) / len(recent_returns) if recent_returns else float("nan")
            print(f"steps {env_steps:>8}  episodes {episodes:>6}  mean return (last {len(recent_returns)}) "
                  f"{shown:7.1f}  {time.perf_counter() - start:6.1f} s", flush=True)

    if hasattr(env, "close"):
        env.close()
    if recent_returns and not solved:
        mean_return = sum(recent_returns) / len(recent_returns)
    print(json.dumps({"solved": solved, "env_steps": env_steps, "wall_seconds": round(time.perf_counter() - start, 3),
                      "mean_return": None if mean_return != mean_return else round(mean_return, 2),
                      "episodes": episodes}))
    return 0 if solved else 1


if __name__ == "__main__":
    sys.exit(main())
