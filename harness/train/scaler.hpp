// A loss scaler with the semantics of PyTorch's torch.amp.GradScaler (torch/amp/grad_scaler.py),
// for one optimizer: the same defaults, the same fp32 scale arithmetic, the same per-step stage
// machine and the same misuse errors; plus, on request, a minimum scale and warnings of scale
// collapse. The element math lives in scaler_math.hpp, shared with CUDA kernels. docs/scaler.md
// describes the semantics and their sources.
//
// One iteration:
//   loss_for_backward = scaler.scale_loss(loss);   // then the backward pass fills the gradients
//   scaler.unscale(grads);                         // optional: to clip or inspect the gradients
//   scaler.step(grads, optimizer_step);            // skipped when a gradient was inf or NaN
//   scaler.update();                               // backoff or growth of the scale
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/scaler_math.hpp"

namespace ampbench::train {

// The gradient tensors of one optimizer, each a run of fp32 containers, unscaled in place.
using GradientList = std::span<const std::span<float>>;

// Beyond PyTorch: warn when the scale collapses.
struct CollapseDetection {
  int backoffs = 10;  // k: warn when the scale decreases k times (a backoff pinned at min_scale
                      // does not count) ...
  int window = 100;   // m: ... within m consecutive steps (m >= k >= 1)
};

struct LossScalerOptions {
  double init_scale = 65536.0;  // rounded to binary32, like PyTorch's fp32 scale tensor
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int growth_interval = 2000;
  // Beyond PyTorch: the backoff never takes the scale below this (finite, 0 <= min <= init).
  std::optional<double> min_scale = std::nullopt;
  std::optional<CollapseDetection> collapse = std::nullopt;
};

struct ScalerOptionError {
  std::string option;   // the LossScalerOptions member: "growth_factor", "collapse.window"
  std::string message;  // what is wrong with its value: "must be finite and > 1, got 1"
};

// The first invalid option, if any: growth_factor finite and > 1, 0 < backoff_factor < 1,
// growth_interval >= 1, init_scale finite and > 0 as a binary32 value, min_scale finite and in
// [0, init_scale], collapse window >= backoffs >= 1.
std::optional<ScalerOptionError> validate(const LossScalerOptions& options);

// Where the iteration stands, as PyTorch's OptState.
enum class ScalerStage : std::uint8_t { ready, unscaled, stepped };

struct CollapseWarning {
  enum class Kind : std::uint8_t {
    below_one,         // the scale fell below 1: the gradients are scaled down, not up
    rapid_backoff,     // k backoffs within m steps
    inverse_overflow,  // 1/scale is inf in binary32: unscaled gradients become inf, 0 becomes NaN
  };
  Kind kind;
  std::int64_t step;  // the step whose update raised it (steps count from 0)
  float scale;        // the scale after that update
};

// One line of text for a warning, such as "step 16: the scale fell below 1 (0.5): ...".
std::string describe(const CollapseWarning& warning, const CollapseDetection& rule);

class LossScaler {
 public:
  // Throws std::invalid_argument with validate()'s error, the option's name first. A min_scale
  // that is no binary32 value is rounded up.
  explicit LossScaler(const LossScalerOptions& options = {});

  // loss * scale, rounded to binary32.
  float scale_loss(float loss) const { return loss * state_.scale; }

  // Multiplies every gradient element by inverse_scale() in place and records whether any was
  // inf or NaN (judged before the multiply, as PyTorch does). An inf check is recorded only when
  // `grads` holds at least one tensor, even an empty one, as PyTorch records one per device.
  // `storage` is the format the gradients are held in: fp16 gradients throw
  // std::invalid_argument("Attempting to unscale FP16 gradients."), as GradScaler.unscale_ does
  // (master gradients must be fp32); bf16 gradients get the binary32 product rounded back to bf16
  // (nearest even), as PyTorch stores it. Throws std::logic_error when called twice in an iteration
  // or after step().
  void unscale(GradientList grads, const numeric::Format& storage = numeric::formats::fp32);

  // The gradients were unscaled elsewhere, by inverse_scale() with unscale_and_check, as a device
  // kernel does (kernels::GradientUnscaler), and `found_inf` is what its check found: the
  // iteration stands as after unscale() of at least one tensor. Throws std::logic_error as
  // unscale() does when called twice in an iteration or after step().
  void record_unscaled(bool found_inf);

  // Unscales `grads` unless unscale() was called in this iteration, then calls optimizer_step
  // unless a gradient was inf or NaN. Returns whether the optimizer step ran. Throws
  // std::logic_error when called twice in an iteration, or when no inf check was recorded
  // (no gradient tensors).
  bool step(GradientList grads, const std::function<void()>& optimizer_step,
            const numeric::Format& storage = numeric::formats::fp32);

  // Backs off or grows the scale from this iteration's inf check, and starts the next iteration.
  // Throws std::logic_error when no inf check was recorded since the last update.
  void update();

  float scale() const { return state_.scale; }
  float inverse_scale() const { return train::inverse_scale(state_.scale); }
  int growth_tracker() const { return state_.growth_tracker; }
  ScalerStage stage() const { return stage_; }
  bool found_inf() const { return found_inf_; }
  const ScaleRule& rule() const { return rule_; }

  // Iterations completed by update(); the current one has this index.
  std::int64_t steps() const { return steps_; }
  // Indices of the iterations whose optimizer step was skipped, in order.
  const std::vector<std::int64_t>& skipped_steps() const { return skipped_; }
  const std::vector<CollapseWarning>& collapse_warnings() const { return warnings_; }
  const std::optional<CollapseDetection>& collapse_detection() const { return collapse_; }

 private:
  void require_ready_to_unscale() const;
  void detect_collapse(float previous_scale);

  ScaleRule rule_{};
  std::optional<CollapseDetection> collapse_;
  ScaleState state_{};
  ScalerStage stage_ = ScalerStage::ready;
  bool inf_check_recorded_ = false;
  bool found_inf_ = false;
  std::int64_t steps_ = 0;
  std::vector<std::int64_t> skipped_;
  std::vector<std::int64_t> backoff_steps_;  // within the collapse window only
  std::optional<std::int64_t> last_rapid_backoff_warning_;
  std::vector<CollapseWarning> warnings_;
};

}  // namespace ampbench::train
