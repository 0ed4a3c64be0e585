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

RecipeGemms::RecipeGemms(quant::Recipe recipe, std::string arch, std::uint64_t seed,
                         std::vector<std::size_t> keep_bf16)
    : recipe_(std::move(recipe)),
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

RecipeGemms::RecipeGemms(quant::Recipe recipe, RecipeGemmDevice device, std::uint64_t seed,
                         std::vector<std::size_t> keep_bf16)
    : recipe_(std::move(recipe)),
      arch_(device.name),
      seed_(seed),
      keep_bf16_(std::move(keep_bf16)),
      device_(std::move(device)) {
  if (!device_->multiply || device_->rows_multiple == 0 || device_->k_multiple == 0) {
    throw std::logic_error("RecipeGemms: a device without a product or with a zero multiple");
  }
}

void RecipeGemms::parameter_made(const void* storage) {
  if (parameters_done_) parameters_.clear();
  parameters_done_ = false;
  parameters_.push_back(storage);
}

void RecipeGemms::parameters_are(std::vector<const void*> storage) {
  parameters_ = std::move(storage);
  parameters_done_ = false;
}

std::size_t RecipeGemms::layer_of(const void* w) {
  parameters_done_ = true;
  const auto it = std::find(parameters_.begin(), parameters_.end(), w);
  if (it == parameters_.end()) {
    throw std::logic_error(
        "a recipe's linear or convolution layer was given a weight that is not a parameter of "
        "this pass");
  }
  return static_cast<std::size_t>(it - parameters_.begin());
}

bool RecipeGemms::kept(std::size_t p) const {
  return std::find(keep_bf16_.begin(), keep_bf16_.end(), p) != keep_bf16_.end();
}

quant::DelayedScaling& RecipeGemms::delayed_state(std::size_t p, Role role) {
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

void RecipeGemms::note(const Key& key, const quant::QuantizedOperand& q, double amax,
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

std::vector<double> RecipeGemms::gemm(Gemm g, std::vector<float> a, std::size_t m,
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
  if (device_) {
    k_to = std::lcm(k_to, device_->k_multiple);
    m_to = std::lcm(m_to, device_->rows_multiple);
    n_to = std::lcm(n_to, device_->rows_multiple);
  }
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
  if (mma || device_) {
    const std::vector<double> full =
        mma ? quant::recipe_product(qa.q, qb.q, *mma, recipe_.promote_interval)
            : device_->multiply(g, qa.q, qb.q);
    if (full.size() != mp * np) {
      throw std::logic_error(fmt::format("{}: the {} GEMM's product has {} values, not {} x {}",
                                         arch_, quant::gemm_name(g), full.size(), mp, np));
    }
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

std::vector<double> RecipeGemms::convolution(Gemm g, ops::convolution::Pass pass,
                                             const ops::convolution::Geometry& geometry,
                                             const std::vector<float>& first,
                                             const std::vector<float>& second, std::size_t p) {
  if (geometry.groups != 1) {
    throw std::invalid_argument(
        fmt::format("a grouped convolution (groups = {}) under a recipe is not modelled: its "
                    "per-tensor scales would span the groups' separate GEMMs",
                    geometry.groups));
  }
  std::vector<double> out(ops::element_count(ops::convolution::output_shape(pass, geometry)));
  for (auto& part : ops::convolution::lower<float>(pass, geometry, first, second)) {
    // The lowered gemm is A (m x k) times B (k x n); the recipe's GEMM takes B as n x k.
    const std::size_t m = part.shape.sizes[0], n = part.shape.sizes[1], k = part.shape.sizes[2];
    const std::vector<double> c =
        gemm(g, std::move(part.a), m, numeric::transposed(part.b, k, n), n, k, p);
    for (std::size_t l = 0; l < c.size(); ++l) out[part.place[l]] = c[l];
  }
  return out;
}

std::vector<ScaledTensorRecord> RecipeGemms::finish_step() {
  for (auto& [key, state] : delayed_) state.update();
  std::vector<ScaledTensorRecord> records;
  records.reserve(step_.size());
  for (auto& [key, record] : step_) records.push_back(record);
  step_.clear();
  return records;
}

template class RecipeOpsOn<EmulatedOps>;

}  // namespace ampbench::train
