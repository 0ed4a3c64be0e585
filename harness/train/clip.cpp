#include "harness/train/clip.hpp"

#include <cmath>

#include "harness/numeric/clip_math.hpp"

namespace ampbench::train {

double clip_grad_norm(GradientList grads, double max_norm) {
  double sum_of_squares = 0.0;
  for (const std::span<float> tensor : grads) {
    for (const float g : tensor) sum_of_squares += static_cast<double>(g) * static_cast<double>(g);
  }
  const double total_norm = std::sqrt(sum_of_squares);
  const float coefficient = clip_coefficient(total_norm, max_norm);
  for (const std::span<float> tensor : grads) {
    for (float& g : tensor) g *= coefficient;
  }
  return total_norm;
}

}  // namespace ampbench::train
