#include "harness/train/optimizer.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ampbench::train {
namespace {

[[noreturn]] void reject(const std::string& option, const std::string& condition, double value) {
  throw std::invalid_argument(fmt::format("{} must be {}, got {}", option, condition, value));
}

// The comparisons are written so that NaN fails them.
void require_non_negative(const char* option, double value) {
  if (!(value >= 0.0)) reject(option, ">= 0", value);
}

void require_beta(const char* option, double value) {
  if (!(value >= 0.0 && value < 1.0)) reject(option, "in [0, 1)", value);
}

}  // namespace

void validate(const SgdOptions& options) {
  require_non_negative("lr", options.lr);
  require_non_negative("momentum", options.momentum);
  require_non_negative("weight_decay", options.weight_decay);
  if (options.nesterov && !(options.momentum > 0.0 && options.dampening == 0.0)) {
    throw std::invalid_argument(
        fmt::format("nesterov requires momentum > 0 and dampening == 0, got momentum {} and "
                    "dampening {}",
                    options.momentum, options.dampening));
  }
}

void validate(const AdamWOptions& options) {
  require_non_negative("lr", options.lr);
  require_non_negative("eps", options.eps);
  require_beta("beta1", options.beta1);
  require_beta("beta2", options.beta2);
  require_non_negative("weight_decay", options.weight_decay);
}

namespace detail {

void check_step_shapes(std::span<const std::size_t> param_sizes,
                       std::span<const std::size_t> grad_sizes,
                       std::span<const std::size_t> state_sizes) {
  if (grad_sizes.size() != param_sizes.size()) {
    throw std::invalid_argument(
        fmt::format("step: {} gradients for {} parameters", grad_sizes.size(), param_sizes.size()));
  }
  for (std::size_t i = 0; i < param_sizes.size(); ++i) {
    if (grad_sizes[i] != param_sizes[i]) {
      throw std::invalid_argument(
          fmt::format("step: gradient {} has {} elements, parameter {} "
                      "has {}",
                      i, grad_sizes[i], i, param_sizes[i]));
    }
  }
  if (state_sizes.empty()) return;
  if (state_sizes.size() != param_sizes.size()) {
    throw std::invalid_argument(
        fmt::format("step: {} parameters, but the optimizer state was made for {}",
                    param_sizes.size(), state_sizes.size()));
  }
  for (std::size_t i = 0; i < param_sizes.size(); ++i) {
    if (state_sizes[i] != param_sizes[i]) {
      throw std::invalid_argument(
          fmt::format("step: parameter {} has {} elements, but its optimizer state has {}", i,
                      param_sizes[i], state_sizes[i]));
    }
  }
}

}  // namespace detail
}  // namespace ampbench::train
