#include "coral/actors/epsilon_schedule.hpp"

#include <cmath>

namespace coral::actors {

double ape_x_epsilon(std::size_t i, std::size_t n, double base, double alpha) noexcept {
  if (n <= 1) return base;
  return std::pow(base, 1.0 + alpha * static_cast<double>(i) / static_cast<double>(n - 1));
}

epsilon_schedule::epsilon_schedule(std::size_t rows, double base, double alpha, std::uint64_t decay_steps,
                                   std::uint64_t steps_done)
    : decay_steps_(decay_steps), steps_(steps_done) {
  rungs_.reserve(rows);
  for (std::size_t r = 0; r < rows; ++r) rungs_.push_back(ape_x_epsilon(r, rows, base, alpha));
}

double epsilon_schedule::epsilon(std::size_t row, std::uint64_t steps) const noexcept {
  const double rung = rungs_[row];
  if (decay_steps_ == 0 || steps >= decay_steps_) return rung;
  const double left = 1.0 - static_cast<double>(steps) / static_cast<double>(decay_steps_);
  return rung + (1.0 - rung) * left;
}

}  // namespace coral::actors
