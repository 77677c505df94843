
TEST_CASE("Adam's update gives the bits of its plain scalar formula at every length and tail",
          "[learners][fused]") {
  coral::rng gen(21);
  for (std::size_t n = 0; n <= 41; ++n) {
    std::vector<float> params(n), grads(n), m(n), v(n);
    for (std::size_t i = 0; i < n; ++i) {
      params[i] = static_cast<float>(gen.normal());
      grads[i] = static_cast<float>(gen.normal() * 1e-2);
      m[i] = static_cast<float>(gen.normal() * 1e-3);
      v[i] = static_cast<float>(gen.uniform() * 1e-4);
    }
    auto want_p = params, want_m = m, want_v = v;
    // The reference: adam.hpp's loop as it was written before the engine.
    const std::uint64_t step = 3;
    const double lr = 3e-4, epsilon = 1e-5;
    const auto step_size = static_cast<float>(lr / (1.0 - std::pow(0.9, 3.0)));
    const auto inv_c2 = static_cast<float>(1.0 / (1.0 - std::pow(0.999, 3.0)));
    const auto eps = static_cast<float>(epsilon);
    for (std::size_t j = 0; j < n; ++j) {
      want_m[j] = 0.9f * want_m[j] + (1.0f - 0.9f) * grads[j];
      want_v[j] = 0.999f * want_v[j] + (1.0f - 0.999f) * grads[j] * grads[j];
      want_p[j] -= step_size * want_m[j] / (std::sqrt(want_v[j] * inv_c2) + eps);
    }
    fused::adam_update(params.data(), grads.data(), m.data(), v.data(), n, step, lr, epsilon);
    INFO("n = " << n);
    CHECK(params == want_p);
    CHECK(m == want_m);
    CHECK(v == want_v);
  }
}

TEST_CASE("square_sum gives the same bits however the floats are split into spans", "[learners][fused]") {
  coral::rng gen(22);
  std::vector<float> x(203);
  for (auto& v : x) v = static_cast<float>(gen.normal());
  // The reference: eight serial sums, element i to sum i mod 8, added in order.
  double lanes[8] = {};
  for (std::size_t i = 0; i < x.size(); ++i) lanes[i % 8] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  double want = 0;
  for (const double l : lanes) want += l;
  for (const std::size_t first : {0, 1, 5, 8, 13, 64, 203}) {
    for (const std::size_t second : {0, 3, 9, 100}) {
      if (first + second > x.size()) continue;
      fused::square_sum s;
      const std::span<const float> all(x);
      s.add(all.subspan(0, first));
      s.add(all.subspan(first, second));
      s.add(all.subspan(first + second));
      INFO("spans of " << first << ", " << second << " and the rest");
      CHECK(s.total() == want);
    }
  }
}
