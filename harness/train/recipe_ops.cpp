#include "harness/train/recipe_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "harness/inputs/distributions.hpp"
#include "harness/numeric/mma.hpp"
#include "harness/numeric/transpose.hpp"
#include "harness/quant/hadamard.hpp"
#include "reference/exact/dot.hpp"

namespace ampbench::train {
namespace {

using quant::Gemm;
using quant::Role;

constexpr std::array<Gemm, 3> kGemms{Gemm::fprop, Gemm::dgrad, Gemm::wgrad};

// The values (of a binary32-representable format) as floats: exact.
std::vector<float> floats(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

// rows x cols, zero-padded to rows_to x cols_to.
std::vector<float> padded(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                          std::size_t rows_to, std::size_t cols_to) {
  if (rows == rows_to && cols == cols_to) return x;
  std::vector<float> p(rows_to * cols_to, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(r * cols), cols,
                p.begin() + static_cast<std::ptrdiff_t>(r * cols_to));
  }
  return p;
}

std::size_t round_up(std::size_t n, std::size_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

bool known_recipe_arch(const std::string& arch) {
  for (const numeric::MmaModel& m : numeric::mma_presets()) {
    if (arch == m.arch) return true;
  }
  return false;
}

}  // namespace

policy::Policy RecipeOps::base_policy() {
  return *policy::find_builtin("amp-bf16");
}

RecipeOps::RecipeOps(quant::Recipe recipe, std::string arch, std::uint64_t seed,
                     std::vector<std::size_t> keep_bf16)
    : EmulatedOps(base_policy()),
      recipe_(std::move(recipe)),
      arch_(std::move(arch)),
      seed_(seed),
      keep_bf16_(std::move(keep_bf16)) {
  if (arch_ == "exact") return;
  if (!known_recipe_arch(arch_)) {
    throw std::invalid_argument(fmt::format(
        "unknown architecture '{}' (exact, volta, turing, ampere, ada, hopper, blackwell)", arch_));
  }
  for (const Gemm g : kGemms) {
    quant::MmaChoice choice = quant::recipe_mma(arch_, recipe_, g);
    if (!choice.mma) {
      throw std::invalid_argument(
          fmt::format("{} on {}: {}: {}", recipe_.name, arch_, quant::gemm_name(g), choice.reason));
    }
    mma_[static_cast<std::size_t>(g)] = std::move(choice.mma);
  }
}

RecipeOps::Tensor RecipeOps::parameter(std::span<const Master> values) {
  if (parameters_done_) parameters_.clear();
  parameters_done_ = false;
  Tensor t = EmulatedOps::parameter(values);
  parameters_.push_back(t.values.data());  // moving the tensor keeps its storage
  return t;
}

std::size_t RecipeOps::parameter_of(const Tensor& w) const {
  const auto it = std::find(parameters_.begin(), parameters_.end(), w.values.data());
  if (it == parameters_.end()) {
    throw std::logic_error(
        "a recipe's linear or convolution layer was given a weight that is not a parameter of "
        "this pass");
  }
  return static_cast<std::size_t>(it - parameters_.begin());
}

bool RecipeOps::kept(std::size_t p) const {
  return std::find(keep_bf16_.begin(), keep_bf16_.end(), p) != keep_bf16_.end();
}

quant::DelayedScaling& RecipeOps::delayed_state(std::size_t p, Role role) {
  const auto key = std::make_pair(p, role);
  auto it = delayed_.find(key);
  if (it == delayed_.end()) {
    quant::DelayedScalingConfig config;
    config.margin = recipe_.delayed.margin;
    config.amax_history_len = recipe_.delayed.amax_history_len;
    config.amax_compute_algo = recipe_.delayed.amax_compute_algo;
    config.fmt_max = quant::max_finite(recipe_.operand(role).element);
    it = delayed_.emplace(key, quant::DelayedScaling(config)).first;
  }
  return it->second;
}

void RecipeOps::note(const Key& key, const quant::QuantizedOperand& q, double amax,
                     std::size_t elements) {
  ScaledTensorRecord& r = step_[key];
  std::tie(r.parameter, r.gemm, r.role) = key;
  r.amax = std::max(r.amax, amax);
  const quant::OperandRecipe& o = recipe_.operand(std::get<2>(key));
  if (q.q.rule == quant::ScaleRule::nvfp4) {
    r.scale = q.q.global_scale;
  } else if (o.granularity == quant::Granularity::tensor) {
    r.scale = q.q.tiles.at(0).scale;
  }
  r.elements += elements;
  r.saturated += q.q.events.saturated;
  r.flushed += q.q.events.flushed;
  r.subnormal += q.q.events.subnormal;
  r.blocks_lost += q.q.events.blocks_lost;
}

std::vector<double> RecipeOps::gemm(Gemm g, std::vector<float> a, std::size_t m,
                                    std::vector<float> b, std::size_t n, std::size_t k,
                                    std::size_t p) {
  const auto [ra, rb] = quant::gemm_roles(g);
  const std::optional<quant::RecipeMma>& mma = mma_[static_cast<std::size_t>(g)];
  // The multiples each dimension is padded to.
  std::size_t k_to = 1, m_to = 1, n_to = 1;
  const auto tiles = [&](Role role, std::size_t& rows_to) {
    const quant::OperandRecipe& o = recipe_.operand(role);
    if (o.granularity != quant::Granularity::tensor) k_to = std::lcm(k_to, o.block);
    if (o.granularity == quant::Granularity::block) rows_to = std::lcm(rows_to, o.block);
    if (quant::applies_hadamard(recipe_, role, g)) k_to = std::lcm(k_to, quant::kHadamardSize);
  };
  tiles(ra, m_to);
  tiles(rb, n_to);
  if (mma) k_to = std::lcm(k_to, quant::instruction_k(*mma));
  const std::size_t kp = round_up(k, k_to), mp = round_up(m, m_to), np = round_up(n, n_to);
  a = padded(a, m, k, mp, kp);
  b = padded(b, n, k, np, kp);

  const auto quantize = [&](Role role, const std::vector<float>& t, std::size_t rows,
                            std::size_t real) {
    const double amax = quant::amax(t);
    std::optional<float> scale;
    if (recipe_.operand(role).scale == quant::ScaleChoice::delayed) {
      quant::DelayedScaling& state = delayed_state(p, role);
      scale = state.scale();
      state.record(static_cast<float>(amax));
    }
    const Key key{p, g, role};
    const std::uint64_t stream = inputs::operand_seed(
        seed_, (p * 3 + static_cast<std::uint64_t>(g)) * 3 + static_cast<std::uint64_t>(role));
    quant::QuantizedOperand q = quant::quantize_operand(
        recipe_, role, g, t, rows, kp, inputs::operand_seed(stream, draws_[key]++), scale);
    note(key, q, amax, real);
    return q;
  };
  const quant::QuantizedOperand qa = quantize(ra, a, mp, m * k);
  const quant::QuantizedOperand qb = quantize(rb, b, np, n * k);

  std::vector<double> c(m * n);
  if (mma) {
    const std::vector<double> full =
        quant::recipe_product(qa.q, qb.q, *mma, recipe_.promote_interval);
    for (std::size_t i = 0; i < m; ++i) {
      std::copy_n(full.begin() + static_cast<std::ptrdiff_t>(i * np), n,
                  c.begin() + static_cast<std::ptrdiff_t>(i * n));
    }
  } else {
    for (std::size_t i = 0; i < m; ++i) {
      const std::span<const double> ai(qa.q.dequantized.data() + i * kp, kp);
      for (std::size_t j = 0; j < n; ++j) {
        const std::span<const double> bj(qb.q.dequantized.data() + j * kp, kp);
        c[i * n + j] = reference::exact_dot(numeric::formats::fp64, ai, bj)
                           .round(numeric::formats::fp32, numeric::Rounding::nearest_even)
                           .value;
      }
    }
  }
  return c;
}

RecipeOps::Tensor RecipeOps::linear(const Tensor& x, const Tensor& w, const Tensor& b,
                                    std::size_t rows, std::size_t in, std::size_t out) {
  parameters_done_ = true;
  const std::size_t p = parameter_of(w);
  if (kept(p)) return EmulatedOps::linear(x, w, b, rows, in, out);
  const auto range = op_range("linear");
  const ops::Autocast f = flow("linear", policy::Op::linear, {x.format});
  const Tensor ba = operand(f, 2, b);
  // y = x w: A = x (rows x in), B = w^T (out x in), K = in.
  Tensor y{gemm(Gemm::fprop, floats(x.values), rows, numeric::transposed(floats(w.values), in, out),
                out, in, p),
           numeric::formats::fp32};
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < out; ++j) {
      double& v = y.values[i * out + j];
      v = static_cast<double>(static_cast<float>(v) + static_cast<float>(ba.values[j]));
    }
  }
  return result(f, y);
}

RecipeOps::LinearGradients RecipeOps::linear_backward(const Tensor& x, const Tensor& w,
                                                      const Tensor& b, const Tensor& dy,
                                                      std::size_t rows, std::size_t in,
                                                      std::size_t out, bool need_dx) {
  parameters_done_ = true;
  const std::size_t p = parameter_of(w);
  if (kept(p)) return EmulatedOps::linear_backward(x, w, b, dy, rows, in, out, need_dx);
  const auto range = op_range("linear_backward");
  const std::initializer_list<numeric::Format> inputs{x.format};
  const ops::Autocast dx_flow = flow("gemm_backward_a", policy::Op::linear, inputs);
  const ops::Autocast dw_flow = flow("gemm_backward_b", policy::Op::linear, inputs);
  const ops::Autocast db_flow = flow("linear_backward_bias", policy::Op::linear, inputs);
  const std::vector<float> dyf = floats(dy.values);
  LinearGradients g;
  if (need_dx) {
    // dx = dy w^T: A = dy (rows x out), B = w (in x out), K = out.
    g.dx = gradient(
        dx_flow, x,
        Tensor{gemm(Gemm::dgrad, dyf, rows, floats(w.values), in, out, p), numeric::formats::fp32});
  }
  // dw = x^T dy, as TE's dw = dy^T x (out x in) transposed: A = dy^T, B = x^T, K = rows.
  const std::vector<double> dw = gemm(Gemm::wgrad, numeric::transposed(dyf, rows, out), out,
                                      numeric::transposed(floats(x.values), rows, in), in, rows, p);
  g.dw = gradient(dw_flow, w, Tensor{numeric::transposed(dw, out, in), numeric::formats::fp32});
  g.db = gradient(db_flow, b, run(db_flow, {rows, out}, operand(db_flow, 0, dy)));
  return g;
}

std::vector<double> RecipeOps::convolution(Gemm g, ops::convolution::Pass pass,
                                           const ops::convolution::Geometry& geometry,
                                           const Tensor& first, const Tensor& second,
                                           std::size_t p) {
  if (geometry.groups != 1) {
    throw std::invalid_argument(
        fmt::format("a grouped convolution (groups = {}) under a recipe is not modelled: its "
                    "per-tensor scales would span the groups' separate GEMMs",
                    geometry.groups));
  }
  std::vector<double> out(ops::element_count(ops::convolution::output_shape(pass, geometry)));
  const std::vector<float> f = floats(first.values), s = floats(second.values);
  for (auto& part : ops::convolution::lower<float>(pass, geometry, f, s)) {
    // The lowered gemm is A (m x k) times B (k x n); the recipe's GEMM takes B as n x k.
    const std::size_t m = part.shape.sizes[0], n = part.shape.sizes[1], k = part.shape.sizes[2];
    const std::vector<double> c =
        gemm(g, std::move(part.a), m, numeric::transposed(part.b, k, n), n, k, p);
    for (std::size_t l = 0; l < c.size(); ++l) out[part.place[l]] = c[l];
  }
  return out;
}

RecipeOps::Tensor RecipeOps::conv2d(const Tensor& x, const Tensor& w,
                                    const ops::convolution::Geometry& g) {
  parameters_done_ = true;
  const std::size_t p = parameter_of(w);
  if (kept(p)) return EmulatedOps::conv2d(x, w, g);
  const auto range = op_range("conv2d");
  const ops::Autocast f = flow("conv2d", policy::Op::conv, {x.format});
  return result(f, Tensor{convolution(Gemm::fprop, ops::convolution::Pass::forward, g, x, w, p),
                          numeric::formats::fp32});
}

RecipeOps::ConvolutionGradients RecipeOps::conv2d_backward(const Tensor& x, const Tensor& w,
                                                           const Tensor& dy,
                                                           const ops::convolution::Geometry& g,
                                                           bool need_dx) {
  parameters_done_ = true;
  const std::size_t p = parameter_of(w);
  if (kept(p)) return EmulatedOps::conv2d_backward(x, w, dy, g, need_dx);
  const auto range = op_range("conv2d_backward");
  const std::initializer_list<numeric::Format> inputs{x.format};
  const ops::Autocast dx_flow = flow("conv2d_backward_data", policy::Op::conv, inputs);
  const ops::Autocast dw_flow = flow("conv2d_backward_filter", policy::Op::conv, inputs);
  ConvolutionGradients grads;
  if (need_dx) {
    grads.dx = gradient(
        dx_flow, x,
        Tensor{convolution(Gemm::dgrad, ops::convolution::Pass::backward_data, g, dy, w, p),
               numeric::formats::fp32});
  }
  grads.dw = gradient(
      dw_flow, w,
      Tensor{convolution(Gemm::wgrad, ops::convolution::Pass::backward_filter, g, x, dy, p),
             numeric::formats::fp32});
  return grads;
}

std::vector<ScaledTensorRecord> RecipeOps::finish_step() {
  for (auto& [key, state] : delayed_) state.update();
  std::vector<ScaledTensorRecord> records;
  records.reserve(step_.size());
  for (auto& [key, record] : step_) records.push_back(record);
  step_.clear();
  return records;
}

}  // namespace ampbench::train
