// Random-policy episode statistics of one env: plays N episodes with uniform
// random actions and prints one JSON object with the mean return and mean
// episode length, their standard errors, and the distributions (a count per
// whole return, and length quantiles). scripts/minatar_compare.py runs it
// next to the original MinAtar to check that coral's games agree with it.
//
// Run: build/release/bench/envs/minatar_episodes ENV EPISODES SEED [key=value ...]

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "coral/envs/env_batch.hpp"
#include "coral/envs/registry.hpp"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ENV EPISODES SEED [key=value ...]\n", argv[0]);
    return 2;
  }
  using namespace coral::envs;
  const std::string name = argv[1];
  const long episodes = std::strtol(argv[2], nullptr, 10);
  const std::uint64_t seed = std::strtoull(argv[3], nullptr, 10);
  std::vector<std::string> texts(argv + 4, argv + argc);
  try {
    auto e = registry::global().make(name, parse_env_args(texts), seed, 0);
    env_batch batch(1, e->observation_space(), e->action_space());
    const env_rows rows = batch.view(0, 1);
    batch.active()[0] = 1;
    coral::rng actions(coral::env_seed{seed, 0xFFFFFFFFULL});
    std::vector<double> returns, lengths;
    std::map<long, long> histogram;
    for (long k = 0; k < episodes; ++k) {
      e->reset(rows);
      double ret = 0;
      long len = 0;
      for (;;) {
        std::int32_t* a = batch.discrete_actions().data();
        sample_action(e->action_space(), actions, std::span(a, 1), std::span<float>());
        e->step(rows);
        ret += batch.rewards()[0];
        ++len;
        if (batch.terminated()[0] != 0 || batch.truncated()[0] != 0) break;
      }
      returns.push_back(ret);
      lengths.push_back(static_cast<double>(len));
      ++histogram[std::lround(ret)];
    }
    const auto stats = [](const std::vector<double>& v, double& mean, double& se) {
      double s = 0, s2 = 0;
      for (double x : v) s += x;
      mean = s / static_cast<double>(v.size());
      for (double x : v) s2 += (x - mean) * (x - mean);
      se = std::sqrt(s2 / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()));
    };
    double rm, rse, lm, lse;
    stats(returns, rm, rse);
    stats(lengths, lm, lse);
    std::sort(lengths.begin(), lengths.end());
    const auto q = [&](double p) { return lengths[static_cast<std::size_t>(p * static_cast<double>(lengths.size() - 1))]; };
    std::printf("{\"env\":\"%s\",\"episodes\":%ld,\"return_mean\":%.6f,\"return_se\":%.6f,\"length_mean\":%.4f,"
                "\"length_se\":%.4f,\"length_quantiles\":[%g,%g,%g,%g,%g],\"return_histogram\":{",
                name.c_str(), episodes, rm, rse, lm, lse, q(0.0), q(0.25), q(0.5), q(0.75), q(1.0));
    bool first = true;
    for (const auto& [r, c] : histogram) {
      std::printf("%s\"%ld\":%ld", first ? "" : ",", r, c);
      first = false;
    }
    std::printf("}}\n");
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "error: %s\n", ex.what());
    return 1;
  }
  return 0;
}
