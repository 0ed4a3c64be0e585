#include "harness/train/clip.hpp"

#include <algorithm>
#include <cmath>

namespace ampbench::train {

double clip_grad_norm(GradientList grads, double max_norm) {
  double sum_of_squares = 0.0;
  for (const std::span<float> tensor : grads) {
    for (const float g : tensor) sum_of_squares += static_cast<double>(g) * static_cast<double>(g);
  }
  const double total_norm = std::sqrt(sum_of_squares);
  // PyTorch's clamp(max=1.0) propagates NaN, and so does this form.
  const double ratio = max_norm / (total_norm + 1e-6);
  const float coefficient = static_cast<float>(ratio > 1.0 ? 1.0 : ratio);
  for (const std::span<float> tensor : grads) {
    for (float& g : tensor) g *= coefficient;
  }
  return total_norm;
}

}  // namespace ampbench::train
