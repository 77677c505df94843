#pragma once
/// \file
/// Test support: the central difference of a loss in one float, the
/// numeric side of the fused engine's gradient checks.

namespace coral::test {

/// (loss() at v + h − loss() at v − h) / 2h, with `v` restored afterwards.
/// `loss` reads `v` where the computation it stands for does.
template <class Loss>
double central_difference(float& v, float h, Loss&& loss) {
  const float kept = v;
  v = kept + h;
  const double up = loss();
  v = kept - h;
  const double down = loss();
  v = kept;
  return (up - down) / (2.0 * static_cast<double>(h));
}

}  // namespace coral::test
