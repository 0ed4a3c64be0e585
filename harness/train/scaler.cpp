#include "harness/train/scaler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/numeric/rounding.hpp"

namespace ampbench::train {
namespace {

// The smallest binary32 value >= m: the floor is never below what was asked for. It is still
// <= init_scale, itself a binary32 value >= m.
float min_scale_rounded_up(double m) {
  float rounded = static_cast<float>(m);
  if (static_cast<double>(rounded) < m) {
    rounded = std::nextafter(rounded, std::numeric_limits<float>::infinity());
  }
  return rounded;
}

}  // namespace

std::optional<ScalerOptionError> validate(const LossScalerOptions& options) {
  const auto error = [](std::string option, std::string message) {
    return std::optional<ScalerOptionError>({std::move(option), std::move(message)});
  };
  // Every comparison is written so that NaN fails it.
  const float init_scale = static_cast<float>(options.init_scale);
  if (!(std::isfinite(init_scale) && init_scale > 0.0f)) {
    return error("init_scale",
                 fmt::format("must be finite and > 0 as a binary32 value, got {} (binary32 {})",
                             options.init_scale, init_scale));
  }
  if (!(options.growth_factor > 1.0 && std::isfinite(options.growth_factor))) {
    return error("growth_factor",
                 fmt::format("must be finite and > 1, got {}", options.growth_factor));
  }
  if (!(options.backoff_factor > 0.0 && options.backoff_factor < 1.0)) {
    return error("backoff_factor",
                 fmt::format("must be in (0, 1), got {}", options.backoff_factor));
  }
  if (options.growth_interval < 1) {
    return error("growth_interval", fmt::format("must be >= 1, got {}", options.growth_interval));
  }
  if (const auto m = options.min_scale;
      m && !(std::isfinite(*m) && *m >= 0.0 && *m <= static_cast<double>(init_scale))) {
    return error("min_scale",
                 fmt::format("must be finite and in [0, init_scale = {}], got {}", init_scale, *m));
  }
  if (const auto& c = options.collapse) {
    if (c->backoffs < 1) {
      return error("collapse.backoffs", fmt::format("must be >= 1, got {}", c->backoffs));
    }
    if (c->window < c->backoffs) {
      return error("collapse.window", fmt::format("must be >= collapse.backoffs = {}, got {}",
                                                  c->backoffs, c->window));
    }
  }
  return std::nullopt;
}

std::string describe(const CollapseWarning& warning, const CollapseDetection& rule) {
  switch (warning.kind) {
    case CollapseWarning::Kind::below_one:
      return fmt::format("step {}: the scale fell below 1 ({}): gradients are scaled down",
                         warning.step, warning.scale);
    case CollapseWarning::Kind::rapid_backoff:
      return fmt::format("step {}: the scale backed off {} times within {} steps (now {})",
                         warning.step, rule.backoffs, rule.window, warning.scale);
    case CollapseWarning::Kind::inverse_overflow:
      return fmt::format(
          "step {}: the scale {} has no finite binary32 inverse: unscaled gradients become "
          "inf, zeros become NaN (0 * inf), and found_inf does not see it",
          warning.step, warning.scale);
  }
  return {};
}

LossScaler::LossScaler(const LossScalerOptions& options) {
  if (const auto error = validate(options)) {
    throw std::invalid_argument(error->option + " " + error->message);
  }
  rule_ = {options.growth_factor, options.backoff_factor, options.growth_interval,
           options.min_scale ? min_scale_rounded_up(*options.min_scale) : 0.0f};
  collapse_ = options.collapse;
  state_ = {static_cast<float>(options.init_scale), 0};
}

void LossScaler::require_ready_to_unscale() const {
  if (stage_ == ScalerStage::unscaled) {
    throw std::logic_error(
        "unscale_() has already been called on this optimizer since the last update().");
  }
  if (stage_ == ScalerStage::stepped) {
    throw std::logic_error("unscale_() is being called after step().");
  }
}

void LossScaler::record_unscaled(bool found_inf) {
  require_ready_to_unscale();
  found_inf_ = found_inf;
  inf_check_recorded_ = true;
  stage_ = ScalerStage::unscaled;
}

void LossScaler::unscale(GradientList grads, const numeric::Format& storage) {
  require_ready_to_unscale();
  if (numeric::same_values(storage, numeric::formats::fp16)) {
    throw std::invalid_argument("Attempting to unscale FP16 gradients.");
  }
  const float inv_scale = inverse_scale();
  // A gradient held in a narrower format (bf16) gets the binary32 product rounded back to it, to
  // nearest even, as PyTorch writes its opmath result back to the tensor's type (and as
  // kernels::GradientUnscaler does on the device).
  const bool narrower = !numeric::same_values(storage, numeric::formats::fp32);
  bool found = false;
  for (const std::span<float> tensor : grads) {
    for (float& g : tensor) {
      const UnscaledElement e = unscale_and_check(g, inv_scale);
      g = narrower ? static_cast<float>(
                         numeric::round_to(storage, numeric::Rounding::nearest_even, e.value).value)
                   : e.value;
      found = found || e.non_finite;
    }
  }
  found_inf_ = found;
  inf_check_recorded_ = !grads.empty();
  stage_ = ScalerStage::unscaled;
}

bool LossScaler::step(GradientList grads, const std::function<void()>& optimizer_step,
                      const numeric::Format& storage) {
  if (stage_ == ScalerStage::stepped) {
    throw std::logic_error("step() has already been called since the last update().");
  }
  if (stage_ == ScalerStage::ready) unscale(grads, storage);
  // PyTorch asserts this after its unscale_, which has moved the stage on to UNSCALED already.
  if (!inf_check_recorded_) {
    throw std::logic_error("No inf checks were recorded for this optimizer.");
  }
  if (found_inf_) {
    skipped_.push_back(steps_);
  } else {
    optimizer_step();
  }
  stage_ = ScalerStage::stepped;
  return !found_inf_;
}

void LossScaler::update() {
  if (!inf_check_recorded_) throw std::logic_error("No inf checks were recorded prior to update.");
  const float previous = state_.scale;
  state_ = update_scale(state_, found_inf_, rule_);
  if (collapse_) detect_collapse(previous);
  stage_ = ScalerStage::ready;
  inf_check_recorded_ = false;
  found_inf_ = false;
  ++steps_;
}

void LossScaler::detect_collapse(float previous_scale) {
  const float scale = state_.scale;
  if (previous_scale >= 1.0f && scale < 1.0f) {
    warnings_.push_back({CollapseWarning::Kind::below_one, steps_, scale});
  }
  if (is_finite(train::inverse_scale(previous_scale)) && !is_finite(inverse_scale())) {
    warnings_.push_back({CollapseWarning::Kind::inverse_overflow, steps_, scale});
  }
  if (scale < previous_scale) {
    backoff_steps_.push_back(steps_);
    const std::int64_t window_start = steps_ - collapse_->window + 1;
    std::erase_if(backoff_steps_, [&](std::int64_t s) { return s < window_start; });
    // At most one warning per window, so that a long run of overflows is reported once per m
    // steps rather than at every step.
    const bool warned_in_window =
        last_rapid_backoff_warning_ && *last_rapid_backoff_warning_ >= window_start;
    if (std::ssize(backoff_steps_) >= collapse_->backoffs && !warned_in_window) {
      warnings_.push_back({CollapseWarning::Kind::rapid_backoff, steps_, scale});
      last_rapid_backoff_warning_ = steps_;
    }
  }
}

}  // namespace ampbench::train
