// Tests of the optimizers. The float runs are compared bit for bit with fixtures that PyTorch
// itself computed (scripts/make-optimizer-fixtures, torch.optim on the CPU); the multiprecision
// run is checked against float and double runs; the remaining expectations are worked out by
// hand in the comments beside them, never taken from running our code.
#include "harness/train/optimizer.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/train/test/expect_error.hpp"
#include "reference/mp/multiprecision.hpp"

namespace ampbench::train {
namespace {

using reference::Real;
using Tensors = std::vector<std::vector<float>>;

// ---------------------------------------------------------------------------------------------
// Fixtures from PyTorch

float float_of_hex(const std::string& hex) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(std::stoul(hex, nullptr, 16)));
}

std::string hex_of(float x) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%08x", std::bit_cast<std::uint32_t>(x));
  return buffer;
}

Tensors tensors_of(const nlohmann::json& lists) {
  Tensors out;
  for (const auto& list : lists) {
    auto& t = out.emplace_back();
    for (const auto& hex : list) t.push_back(float_of_hex(hex.get<std::string>()));
  }
  return out;
}

const nlohmann::json& fixtures() {
  static const nlohmann::json data = [] {
    std::ifstream in(std::string(AMPBENCH_OPTIMIZER_TEST_DATA) + "/optimizer_fixtures.json");
    if (!in) throw std::runtime_error("cannot open optimizer_fixtures.json");
    return nlohmann::json::parse(in);
  }();
  return data;
}

// Bit-for-bit equality of every element, naming the first few that differ.
void expect_bits(const Tensors& expected, const Tensors& actual, const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  int reported = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(expected[i].size(), actual[i].size()) << what << " tensor " << i;
    for (std::size_t j = 0; j < expected[i].size(); ++j) {
      if (std::bit_cast<std::uint32_t>(expected[i][j]) ==
          std::bit_cast<std::uint32_t>(actual[i][j]))
        continue;
      if (++reported <= 5) {
        ADD_FAILURE() << what << " tensor " << i << " element " << j << ": PyTorch "
                      << hex_of(expected[i][j]) << " (" << expected[i][j] << "), ours "
                      << hex_of(actual[i][j]) << " (" << actual[i][j] << ")";
      }
    }
  }
}

SgdOptions sgd_options(const nlohmann::json& o) {
  return {o.at("lr").get<double>(), o.at("momentum").get<double>(), o.at("dampening").get<double>(),
          o.at("weight_decay").get<double>(), o.at("nesterov").get<bool>()};
}

AdamWOptions adamw_options(const nlohmann::json& o) {
  return {o.at("lr").get<double>(),           o.at("beta1").get<double>(),
          o.at("beta2").get<double>(),        o.at("eps").get<double>(),
          o.at("weight_decay").get<double>(), o.at("amsgrad").get<bool>()};
}

TEST(OptimizerFixtures, RecordTheirOracle) {
  const auto& f = fixtures();
  EXPECT_NE(f.at("oracle").get<std::string>().find("PyTorch"), std::string::npos);
  EXPECT_GE(f.at("cases").size(), 8u);
}

// Every case: after every step, the parameters and each state tensor equal PyTorch's bits.
TEST(OptimizerFixtures, FloatRunsEqualPyTorchBitForBit) {
  int sgd_cases = 0, adamw_cases = 0;
  for (const auto& c : fixtures().at("cases")) {
    const auto name = c.at("name").get<std::string>();
    Tensors params = tensors_of(c.at("params"));
    const bool is_sgd = c.at("optimizer") == "sgd";
    std::optional<Sgd<float>> sgd;
    std::optional<AdamW<float>> adamw;
    if (is_sgd) {
      sgd.emplace(sgd_options(c.at("options")));
      ++sgd_cases;
    } else {
      adamw.emplace(adamw_options(c.at("options")), TorchKernels::cpu);
      ++adamw_cases;
    }
    int step = 0;
    for (const auto& s : c.at("steps")) {
      ++step;
      const Tensors grads = tensors_of(s.at("grads"));
      if (is_sgd) {
        sgd->step(params, grads);
      } else {
        adamw->step(params, grads);
      }
      const std::string where = name + ", step " + std::to_string(step) + ", ";
      expect_bits(tensors_of(s.at("params")), params, where + "params");
      for (const auto& [key, value] : s.at("state").items()) {
        const Tensors* ours = nullptr;
        if (key == "momentum_buffer") ours = &sgd->momentum_buffers();
        if (key == "exp_avg") ours = &adamw->exp_avg();
        if (key == "exp_avg_sq") ours = &adamw->exp_avg_sq();
        if (key == "max_exp_avg_sq") ours = &adamw->max_exp_avg_sq();
        ASSERT_NE(ours, nullptr) << "unknown state " << key;
        expect_bits(tensors_of(value), *ours, where + key);
      }
      if (HasFailure()) return;
    }
  }
  EXPECT_GE(sgd_cases, 4);
  EXPECT_GE(adamw_cases, 4);
}

// The CUDA kernels round differently in addcmul, the division by bias_correction2_sqrt and
// addcdiv (optimizer_math.hpp), so the CUDA model must leave PyTorch's CPU bits somewhere in
// the AdamW fixtures; SGD's kernels are the same on both.
TEST(OptimizerFixtures, CudaModelDiffersFromTheCpuOnlyInAdamW) {
  int adamw_differences = 0;
  for (const auto& c : fixtures().at("cases")) {
    if (c.at("optimizer") != "adamw") continue;
    Tensors params = tensors_of(c.at("params"));
    AdamW<float> adamw(adamw_options(c.at("options")), TorchKernels::cuda);
    for (const auto& s : c.at("steps")) adamw.step(params, tensors_of(s.at("grads")));
    const Tensors expected = tensors_of(c.at("steps").back().at("params"));
    for (std::size_t i = 0; i < params.size(); ++i) {
      for (std::size_t j = 0; j < params[i].size(); ++j) {
        adamw_differences += std::bit_cast<std::uint32_t>(params[i][j]) !=
                             std::bit_cast<std::uint32_t>(expected[i][j]);
      }
    }
  }
  EXPECT_GT(adamw_differences, 0);
}

// ---------------------------------------------------------------------------------------------
// Hand-checked values

// SGD with lr 0.5, momentum 0.5, w0 = 1, gradients 0.25 then 0.5: every value below is a short
// binary fraction, so no operation rounds and float, double and Real agree exactly.
//   step 1: buf = g1 = 0.25 (a clone: no momentum, no dampening)  w1 = 1 - 0.5 * 0.25 = 0.875
//   step 2: buf = 0.5 * 0.25 + 0.5 = 0.625                         w2 = 0.875 - 0.5 * 0.625 =
//   0.5625
// nesterov: step 1 d = 0.25 + 0.5 * 0.25 = 0.375, w1 = 1 - 0.1875 = 0.8125;
//           step 2 buf = 0.625, d = 0.5 + 0.5 * 0.625 = 0.8125, w2 = 0.8125 - 0.40625 = 0.40625
// dampening 0.5: step 2 buf = 0.5 * 0.25 + (1 - 0.5) * 0.5 = 0.375, w2 = 0.875 - 0.1875 = 0.6875
// weight decay 0.5: d1 = 0.25 + 0.5 * 1 = 0.75, w1 = 1 - 0.375 = 0.625;
//           d2 = 0.5 + 0.5 * 0.625 = 0.8125, buf = 0.375 + 0.8125 = 1.1875,
//           w2 = 0.625 - 0.59375 = 0.03125
template <class T>
void check_sgd_by_hand() {
  struct Case {
    SgdOptions options;
    double buf1, w1, buf2, w2;
  };
  const Case cases[] = {
      {{0.5, 0.5, 0.0, 0.0, false}, 0.25, 0.875, 0.625, 0.5625},
      {{0.5, 0.5, 0.0, 0.0, true}, 0.25, 0.8125, 0.625, 0.40625},
      {{0.5, 0.5, 0.5, 0.0, false}, 0.25, 0.875, 0.375, 0.6875},
      {{0.5, 0.5, 0.0, 0.5, false}, 0.75, 0.625, 1.1875, 0.03125},
  };
  for (const auto& c : cases) {
    Sgd<T> sgd(c.options);
    std::vector<std::vector<T>> w{{T(1)}};
    sgd.step(w, std::vector<std::vector<T>>{{T(0.25)}});
    EXPECT_TRUE(w[0][0] == T(c.w1) && sgd.momentum_buffers()[0][0] == T(c.buf1));
    sgd.step(w, std::vector<std::vector<T>>{{T(0.5)}});
    EXPECT_TRUE(w[0][0] == T(c.w2) && sgd.momentum_buffers()[0][0] == T(c.buf2))
        << "nesterov " << c.options.nesterov << " dampening " << c.options.dampening
        << " weight_decay " << c.options.weight_decay;
    EXPECT_EQ(sgd.steps(), 2);
  }
}

TEST(SgdByHand, MomentumTwoStepsFloat) {
  check_sgd_by_hand<float>();
}
TEST(SgdByHand, MomentumTwoStepsDouble) {
  check_sgd_by_hand<double>();
}
TEST(SgdByHand, MomentumTwoStepsReal) {
  reference::WorkingPrecision precision(200);
  check_sgd_by_hand<Real>();
}

// param.add_(d_p, alpha=-lr) is one fused multiply-add (ufunc/add.h; fmadd on the CPU's vector
// path, contracted by nvcc): with lr = 1 - 2^-23 and d_p = 1 + 2^-23, both binary32,
// lr * d_p = 1 - 2^-46 exactly, so 1 - lr * d_p is 2^-46 rounded once, but 0 if the product were
// rounded first (to 1).
TEST(SgdByHand, UpdateIsOneFusedMultiplyAdd) {
  const double lr = 1.0 - std::ldexp(1.0, -23);
  Sgd<float> sgd({lr, 0.0, 0.0, 0.0, false});
  Tensors w{{1.0f}};
  sgd.step(w, Tensors{{1.0f + std::ldexp(1.0f, -23)}});
  EXPECT_EQ(w[0][0], std::ldexp(1.0f, -46));
}

// One AdamW step from zero state. Exactly: m1 = (1 - b1) g, v1 = (1 - b2) g^2, and
// step_size * m1 / (sqrt(v1) / sqrt(1 - b2) + eps) with step_size = lr / (1 - b1) is
// lr * g / (|g| + eps): the bias corrections undo the first step's (1 - beta) factors. So
//   w1 = w0 (1 - lr wd) - lr sign(g) |g| / (|g| + eps),
// which is w0 (1 - lr wd) - lr for |g| >> eps, whatever the gradient's size (Adam's first step
// moves every weight by lr), and half of that for |g| = eps. Binary32 rounds about ten times on
// the way, each within 2^-24 relative, and the subtraction from w0 = 1 adds at most half an ulp of
// 1: the tolerance is 4 ulps of 1.
template <class T>
void check_first_adamw_step(double tolerance) {
  const double lr = 1e-3, eps = 1e-8;
  for (double wd : {0.0, 0.01}) {
    for (double g : {0.5, -3.0, 1e-3, 1e3, 1e-8}) {
      AdamW<T> adamw({lr, 0.9, 0.999, eps, wd, false});
      std::vector<std::vector<T>> w{{T(1)}};
      adamw.step(w, std::vector<std::vector<T>>{{T(g)}});
      const double expected =
          (1.0 - lr * wd) - lr * (g > 0 ? 1.0 : -1.0) * std::abs(g) / (std::abs(g) + eps);
      EXPECT_NEAR(static_cast<double>(w[0][0]), expected, tolerance) << "g " << g << " wd " << wd;
    }
  }
}

TEST(AdamWByHand, FirstStepMovesByLrFloat) {
  check_first_adamw_step<float>(4 * std::ldexp(1.0, -23));
}
TEST(AdamWByHand, FirstStepMovesByLrReal) {
  reference::WorkingPrecision precision(200);
  // The expectation itself is computed in binary64: a few of its ulps.
  check_first_adamw_step<Real>(1e-15);
}

// ATen's lerp switches formula at weight 0.5 so that weight 1 gives end exactly and weight 0
// gives self: with self = 3, end = 1e-8 (binary32), self + 1 * (end - self) would round
// end - self = -2.99999999 to -3 and give 0.
TEST(AdamWByHand, LerpIsExactAtWeightOne) {
  const float end = 1e-8f;
  EXPECT_EQ(lerp(3.0f, end, 1.0f), end);
  EXPECT_EQ(lerp(3.0f, end, 0.0f), 3.0f);
  EXPECT_EQ(lerp(Real(3), Real(2), Real(0.25)), Real(2.75));
}

// ---------------------------------------------------------------------------------------------
// The multiprecision reference against float and double

template <class T>
std::vector<std::vector<T>> convert(const std::vector<std::vector<double>>& x) {
  std::vector<std::vector<T>> out;
  for (const auto& v : x) {
    auto& o = out.emplace_back();
    for (double d : v) o.push_back(static_cast<T>(d));
  }
  return out;
}

// 100 steps of an optimizer on a quadratic bowl, gradient 2 (w - target) + noise, from fixed
// random starts: the trajectories of T = float, double and Real (200 bits) as doubles.
template <class T>
std::vector<double> trajectory_end(const OptimizerOptions& options) {
  std::mt19937_64 rng(20240607);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> w0(3, std::vector<double>(17)), target = w0;
  for (auto& v : w0)
    for (double& x : v) x = normal(rng);
  for (auto& v : target)
    for (double& x : v) x = 2 * normal(rng);
  auto w = convert<T>(w0);
  const auto t = convert<T>(target);
  Optimizer<T> optimizer(options);
  for (int step = 0; step < 100; ++step) {
    std::vector<std::vector<T>> grads = w;
    for (std::size_t i = 0; i < w.size(); ++i) {
      for (std::size_t j = 0; j < w[i].size(); ++j) {
        // The noise is drawn in double and converted: every type sees the same gradient up to
        // its own rounding of the convex part.
        grads[i][j] = T(2) * (w[i][j] - t[i][j]) + static_cast<T>(0.1 * normal(rng));
      }
    }
    optimizer.step(w, grads);
  }
  std::vector<double> out;
  for (const auto& v : w)
    for (const auto& x : v) out.push_back(static_cast<double>(x));
  return out;
}

double relative_distance(const std::vector<double>& a, const std::vector<double>& reference) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - reference[i]) * (a[i] - reference[i]);
    norm += reference[i] * reference[i];
  }
  return std::sqrt(diff / norm);
}

// A sanity check, not the oracle: the roundings of binary32 (2^-24 per operation, a few per
// element and step, 100 steps) stay below 1e-5 relative, binary64's below 1e-13 (we saw about
// 1e-6 and 1e-15 for AdamW, less for SGD), and the reference is not simply the double run.
void check_against_reference(const OptimizerOptions& options) {
  reference::WorkingPrecision precision(200);
  const auto real = trajectory_end<Real>(options);
  const auto dbl = trajectory_end<double>(options);
  const auto flt = trajectory_end<float>(options);
  const double float_error = relative_distance(flt, real);
  const double double_error = relative_distance(dbl, real);
  char errors[64];
  std::snprintf(errors, sizeof errors, "float %.3g, double %.3g", float_error, double_error);
  ::testing::Test::RecordProperty("relative_errors", errors);
  EXPECT_LT(float_error, 1e-5);
  EXPECT_GT(float_error, 0.0);
  EXPECT_LT(double_error, 1e-13);
  EXPECT_LT(double_error, float_error);
}

TEST(OptimizerReference, AdamWFloatStaysNearReal) {
  check_against_reference(AdamWOptions{1e-2, 0.9, 0.999, 1e-8, 0.01, false});
}
TEST(OptimizerReference, AdamWAmsgradFloatStaysNearReal) {
  check_against_reference(AdamWOptions{1e-2, 0.3, 0.9, 1e-6, 0.0, true});
}
TEST(OptimizerReference, SgdNesterovFloatStaysNearReal) {
  check_against_reference(SgdOptions{0.05, 0.9, 0.0, 1e-3, true});
}
TEST(OptimizerReference, SgdDampeningFloatStaysNearReal) {
  check_against_reference(SgdOptions{0.1, 0.5, 0.3, 0.0, false});
}

// ---------------------------------------------------------------------------------------------
// Options and misuse

using test::expect_error;

TEST(OptimizerOptions, SgdRejectsWhatPyTorchRejects) {
  using E = std::invalid_argument;
  expect_error<E>([] { Sgd<float>({-0.1, 0.9, 0, 0, false}); }, "lr must be >= 0, got -0.1");
  expect_error<E>([] { Sgd<float>({0.1, -1, 0, 0, false}); }, "momentum must be >= 0, got -1");
  expect_error<E>(
      [] {
        Sgd<float>({0.1, 0.9, 0, -0.5, false});
      },
      "weight_decay must be >= 0, got -0.5");
  expect_error<E>([] { Sgd<float>({std::nan(""), 0.9, 0, 0, false}); }, "lr must be >= 0, got nan");
  expect_error<E>(
      [] {
        Sgd<float>({0.1, 0, 0, 0, true});
      },
      "nesterov requires momentum > 0 and dampening == 0, got momentum 0 and "
      "dampening 0");
  expect_error<E>(
      [] {
        Sgd<float>({0.1, 0.9, 0.1, 0, true});
      },
      "nesterov requires momentum > 0 and dampening == 0, got momentum 0.9 and "
      "dampening 0.1");
  EXPECT_NO_THROW(Sgd<float>({0.0, 0.0, 0.5, 0.0, false}));
}

TEST(OptimizerOptions, AdamWRejectsWhatPyTorchRejects) {
  using E = std::invalid_argument;
  const auto with = [](auto change) {
    AdamWOptions o;
    change(o);
    return [o] { AdamW<float>{o}; };
  };
  expect_error<E>(with([](AdamWOptions& o) { o.lr = -1e-3; }), "lr must be >= 0, got -0.001");
  expect_error<E>(with([](AdamWOptions& o) { o.eps = -1e-8; }), "eps must be >= 0, got -1e-08");
  expect_error<E>(with([](AdamWOptions& o) { o.beta1 = 1.0; }), "beta1 must be in [0, 1), got 1");
  expect_error<E>(with([](AdamWOptions& o) { o.beta1 = -0.1; }),
                  "beta1 must be in [0, 1), got -0.1");
  expect_error<E>(with([](AdamWOptions& o) { o.beta2 = 1.5; }), "beta2 must be in [0, 1), got 1.5");
  expect_error<E>(with([](AdamWOptions& o) { o.weight_decay = -0.01; }),
                  "weight_decay must be >= 0, got -0.01");
  EXPECT_NO_THROW(with([](AdamWOptions& o) { o.beta1 = 0.0; })());
}

// A call with the wrong shapes changes nothing: not the parameters, not the state, not the count.
TEST(OptimizerMisuse, MismatchedShapesThrowBeforeAnyChange) {
  AdamW<float> adamw(AdamWOptions{});
  Tensors w{{1.0f, 2.0f}};
  adamw.step(w, Tensors{{0.5f, 0.5f}});
  const Tensors w_after_one = w;
  const Tensors exp_avg = adamw.exp_avg();
  expect_error<std::invalid_argument>([&] { adamw.step(w, Tensors{{0.5f}}); },
                                      "step: gradient 0 has 1 elements, parameter 0 has 2");
  expect_error<std::invalid_argument>([&] { adamw.step(w, Tensors{}); },
                                      "step: 0 gradients for 1 parameters");
  Tensors wider{{1.0f, 2.0f, 3.0f}};
  expect_error<std::invalid_argument>(
      [&] {
        adamw.step(wider, Tensors{{0.5f, 0.5f, 0.5f}});
      },
      "step: parameter 0 has 3 elements, but its optimizer state has 2");
  EXPECT_EQ(w, w_after_one);
  EXPECT_EQ(adamw.exp_avg(), exp_avg);
  EXPECT_EQ(adamw.steps(), 1);
}

// The variant front end is the same optimizer.
TEST(OptimizerMisuse, VariantFrontEndMatchesTheClass) {
  const SgdOptions options{0.1, 0.9, 0.0, 1e-2, true};
  Sgd<float> direct(options);
  Optimizer<float> wrapped(options);
  Tensors a{{1.0f, -2.0f}}, b = a;
  for (int i = 0; i < 3; ++i) {
    const Tensors g{{0.3f * static_cast<float>(i), -0.7f}};
    direct.step(a, g);
    wrapped.step(b, g);
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(wrapped.steps(), 3);
}

}  // namespace
}  // namespace ampbench::train
