// The audit under a recipe: a linear layer's or a convolution's GEMMs quantized, multiplied and
// judged against exact products (recipe_audit.hpp).
#include "harness/audit/recipe_audit.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <thread>
#include <utility>

#include "harness/inputs/distributions.hpp"
#include "harness/numeric/mma.hpp"
#include "harness/numeric/transpose.hpp"
#include "harness/quant/hadamard.hpp"
#include "harness/quant/recipe_gemm.hpp"
#include "reference/exact/dot.hpp"

namespace ampbench::audit {
namespace {

using numeric::transposed;
using quant::Gemm;
using quant::Role;

// A GEMM's operands as it reads them: A (rows x K) and B (cols x K), K along the row.
struct GemmShape {
  std::size_t rows, cols, k;
  const char* a_layout;
  const char* b_layout;
};
GemmShape shape_of(const RecipeCase& c, Gemm g) {
  if (c.conv) {
    const ops::convolution::Geometry& v = *c.conv;
    const std::size_t pixels = v.batch * v.out_h() * v.out_w(), taps = v.kernel_h * v.kernel_w;
    switch (g) {
      case Gemm::fprop: return {pixels, v.filters, v.channels * taps, "im2col(x)", "w"};
      case Gemm::dgrad:
        return {v.batch * v.height * v.width, v.channels, v.filters * taps, "dy lowered",
                "w^T lowered"};
      case Gemm::wgrad: return {v.filters, v.channels * taps, pixels, "dy^T", "im2col(x)^T"};
    }
  }
  switch (g) {
    case Gemm::fprop: return {c.m, c.n, c.k, "x", "w"};
    case Gemm::dgrad: return {c.m, c.k, c.n, "dy", "w^T"};
    case Gemm::wgrad: return {c.n, c.k, c.m, "dy^T", "x^T"};
  }
  return {c.m, c.n, c.k, "x", "w"};
}

std::string tiles_text(const quant::OperandRecipe& o) {
  switch (o.granularity) {
    case quant::Granularity::tensor: return "tensor";
    case quant::Granularity::tile: return fmt::format("1x{}", o.block);
    case quant::Granularity::block: return fmt::format("{}x{}", o.block, o.block);
  }
  return "tensor";
}

// Why operand `o` (rows x k as the GEMM reads it) cannot be cut into its tiles, or nothing.
std::optional<std::string> why_not_tiled(const RecipeCase& c, Gemm g, Role role, std::size_t rows,
                                         std::size_t k, const char* layout) {
  const quant::OperandRecipe& o = c.recipe.operand(role);
  const auto refuse = [&](const char* dim, std::size_t size) {
    return fmt::format(
        "{}: the {} GEMM's {} ({} x {}, K along the row): its {} tiles do not "
        "divide {} = {}",
        c.recipe.name, quant::gemm_name(g), layout, rows, k, tiles_text(o), dim, size);
  };
  if (o.granularity != quant::Granularity::tensor && k % o.block != 0) return refuse("K", k);
  if (o.granularity == quant::Granularity::block && rows % o.block != 0) {
    return refuse("its rows", rows);
  }
  if (quant::applies_hadamard(c.recipe, role, g) && k % quant::kHadamardSize != 0) {
    return fmt::format(
        "{}: {} {}: the 16x16 Hadamard transform runs along K = {}, not a "
        "multiple of 16",
        c.recipe.name, quant::gemm_name(g), layout, k);
  }
  return std::nullopt;
}

std::vector<float> generate(const RecipeCase& c, std::size_t rows, std::size_t cols,
                            std::uint64_t k) {
  const std::size_t shape[] = {rows, cols};
  const inputs::Generated g = inputs::generate(c.distribution, shape, numeric::formats::fp32,
                                               inputs::operand_seed(c.seed, k));
  return {g.tensor.data.begin(), g.tensor.data.end()};  // binary32 values: exact
}

// The scale of a delayed-scaling operand: its state after one update on this tensor's amax.
float delayed_scale(const quant::Recipe& recipe, const quant::OperandRecipe& o,
                    std::span<const float> x) {
  quant::DelayedScalingConfig config;
  config.margin = recipe.delayed.margin;
  config.amax_history_len = recipe.delayed.amax_history_len;
  config.amax_compute_algo = recipe.delayed.amax_compute_algo;
  config.fmt_max = quant::max_finite(o.element);
  quant::DelayedScaling state(config);
  state.record(static_cast<float>(quant::amax(x)));
  state.update();
  return state.scale();
}

// Sums of one kind of error over the outputs.
struct ErrorSums {
  double max = 0, sum = 0, squares = 0;
  void add(double error, double scale) {
    const double normwise = scale > 0 ? error / scale : 0;
    max = std::max(max, normwise);
    sum += normwise;
    squares += error * error;
  }
  ErrorStats stats(std::size_t outputs, double exact_squares) const {
    ErrorStats s;
    s.max_normwise = max;
    s.mean_normwise = outputs == 0 ? 0 : sum / static_cast<double>(outputs);
    s.frobenius = exact_squares > 0 ? std::sqrt(squares) / std::sqrt(exact_squares) : 0;
    return s;
  }
};

// The convolution pass GEMM g is.
ops::convolution::Pass pass_of(Gemm g) {
  using ops::convolution::Pass;
  return g == Gemm::fprop   ? Pass::forward
         : g == Gemm::dgrad ? Pass::backward_data
                            : Pass::backward_filter;
}

// GEMM g's operands A (rows x K) and B (cols x K) from the case's x, w and dy.
std::pair<std::vector<float>, std::vector<float>> operands(const RecipeCase& c, Gemm g,
                                                           const std::vector<float>& x,
                                                           const std::vector<float>& w,
                                                           const std::vector<float>& dy) {
  if (c.conv) {
    const ops::convolution::Pass pass = pass_of(g);
    const std::vector<float>& first = g == Gemm::dgrad ? dy : x;
    const std::vector<float>& second = g == Gemm::wgrad ? dy : w;
    auto part = std::move(ops::convolution::lower<float>(pass, *c.conv, first, second).at(0));
    const std::size_t n = part.shape.sizes[1], k = part.shape.sizes[2];
    return {std::move(part.a), transposed(part.b, k, n)};
  }
  // Linear's, for each matrix of a batch (one for linear), stacked along the rows.
  std::vector<float> a, b;
  const std::size_t batch = c.batch.value_or(1);
  const auto matrix = [](const std::vector<float>& t, std::size_t i, std::size_t size) {
    const auto begin = t.begin() + static_cast<std::ptrdiff_t>(i * size);
    return std::vector<float>(begin, begin + static_cast<std::ptrdiff_t>(size));
  };
  const auto append = [](std::vector<float>& to, const std::vector<float>& from) {
    to.insert(to.end(), from.begin(), from.end());
  };
  for (std::size_t i = 0; i < batch; ++i) {
    const std::vector<float> xi = matrix(x, i, c.m * c.k), wi = matrix(w, i, c.n * c.k);
    const std::vector<float> dyi = matrix(dy, i, c.m * c.n);
    switch (g) {
      case Gemm::fprop:
        append(a, xi);
        append(b, wi);
        break;
      case Gemm::dgrad:
        append(a, dyi);
        append(b, transposed(wi, c.n, c.k));
        break;
      case Gemm::wgrad:
        append(a, transposed(dyi, c.m, c.n));
        append(b, transposed(xi, c.m, c.k));
        break;
    }
  }
  return {std::move(a), std::move(b)};
}

RecipeGemmResult run_gemm(const RecipeCase& c, Gemm g, const std::vector<float>& x,
                          const std::vector<float>& w, const std::vector<float>& dy,
                          const RecipeDevice& device) {
  const GemmShape s = shape_of(c, g);
  // Named, not structured bindings: clang 14 cannot capture those in the lambdas below.
  const std::pair<std::vector<float>, std::vector<float>> ab = operands(c, g, x, w, dy);
  const std::vector<float>& a = ab.first;
  const std::vector<float>& b = ab.second;
  const auto [ra, rb] = quant::gemm_roles(g);
  const auto quantize = [&](Role role, const std::vector<float>& t, std::size_t rows,
                            std::uint64_t stream) {
    const quant::OperandRecipe& o = c.recipe.operand(role);
    std::optional<float> scale;
    if (o.scale == quant::ScaleChoice::delayed) scale = delayed_scale(c.recipe, o, t);
    return quant::quantize_operand(
        c.recipe, role, g, t, rows, s.k,
        inputs::operand_seed(c.seed, 16 + 2 * static_cast<std::uint64_t>(g) + stream), scale);
  };
  // A batch's matrices stacked along the rows, each operand quantized once over the batch.
  const std::size_t batch = c.batch.value_or(1);
  const std::size_t all_rows = batch * s.rows;
  const quant::QuantizedOperand qa = quantize(ra, a, all_rows, 0);
  const quant::QuantizedOperand qb = quantize(rb, b, batch * s.cols, 1);

  RecipeGemmResult r;
  r.gemm = g;
  r.rows = s.rows;
  r.cols = s.cols;
  r.k = s.k;
  r.promote_interval = c.promote_interval.value_or(c.recipe.promote_interval);
  const auto describe = [&](const quant::QuantizedOperand& q, const char* layout) {
    const quant::OperandRecipe& o = c.recipe.operand(q.role);
    OperandQuantization d;
    d.role = std::string(quant::role_name(q.role));
    d.layout = layout;
    d.element = o.element.name;
    d.tiles = tiles_text(o);
    d.transformed = q.transformed;
    d.scale = o.granularity == quant::Granularity::tensor ? q.q.tiles.at(0).scale : 1;
    d.events = q.q.events;
    return d;
  };
  r.a = describe(qa, s.a_layout);
  r.b = describe(qb, s.b_layout);

  // Each matrix's product, in order, by `multiply`.
  const auto each_matrix = [&](const auto& multiply) {
    std::vector<double> all;
    for (std::size_t i = 0; i < batch; ++i) {
      const std::vector<double> p = batch == 1
                                        ? multiply(qa.q, qb.q)
                                        : multiply(quant::row_slice(qa.q, i * s.rows, s.rows),
                                                   quant::row_slice(qb.q, i * s.cols, s.cols));
      all.insert(all.end(), p.begin(), p.end());
    }
    return all;
  };
  std::vector<double> product, model;
  std::optional<quant::RecipeMma> mma;
  if (c.arch == "exact") {
    r.multiplied_on = "exact";
    r.chunks = 1;
  } else {
    const quant::MmaChoice choice = quant::recipe_mma(c.arch, c.recipe, g);
    if (!choice.mma) throw std::invalid_argument(choice.reason);
    mma = choice.mma;
  }
  if (mma) {
    r.multiplied_on = mma->name;
    r.chunks = mma->product == quant::ScaledProduct::promoted
                   ? quant::chunk_ends(qa.q, qb.q, r.promote_interval).size()
               : r.promote_interval == 0 ? 1
                                         : (s.k + r.promote_interval - 1) / r.promote_interval;
    model = each_matrix([&](const quant::Quantized& qa_i, const quant::Quantized& qb_i) {
      return quant::recipe_product(qa_i, qb_i, *mma, r.promote_interval);
    });
  }
  if (device) {
    r.device = nlohmann::json::array();
    product = each_matrix([&](const quant::Quantized& qa_i, const quant::Quantized& qb_i) {
      nlohmann::json ran;
      std::vector<double> p = device(c.recipe, g, qa_i, qb_i, r.promote_interval == 0, &ran);
      r.device.push_back(std::move(ran));
      return p;
    });
    r.multiplied_on = r.device[0].value("library", std::string("device"));
    r.chunks = 0;  // the library's own
  } else {
    product = std::move(model);
  }

  // Each output's exact product, the exact product of its dequantized operands, the result and
  // sum |a b|, on every core; then summed in output order (the same figures on any core count).
  // Output (i, j) of the stacked rows i pairs A's row i with row j of B's matrix of the same batch.
  struct Output {
    double exact, dequantized, result, scale;
  };
  std::vector<Output> out(all_rows * s.cols);
  const auto rows = [&](std::size_t first, std::size_t end) {
    for (std::size_t i = first; i < end; ++i) {
      const std::span<const float> ai(a.data() + i * s.k, s.k);
      const std::span<const double> qai(qa.q.dequantized.data() + i * s.k, s.k);
      const std::size_t b0 = (i / s.rows) * s.cols;  // the first row of B's matrix
      for (std::size_t j = 0; j < s.cols; ++j) {
        const std::span<const float> bj(b.data() + (b0 + j) * s.k, s.k);
        const std::span<const double> qbj(qb.q.dequantized.data() + (b0 + j) * s.k, s.k);
        const reference::ExactValue dequantized =
            reference::exact_dot(numeric::formats::fp64, qai, qbj);
        Output& o = out[i * s.cols + j];
        o.exact = reference::exact_dot(ai, bj).to_double();
        o.dequantized = dequantized.to_double();
        o.result =
            product.empty()
                ? dequantized.round(numeric::formats::fp32, numeric::Rounding::nearest_even).value
                : product[i * s.cols + j];
        o.scale = 0;
        for (std::size_t l = 0; l < s.k; ++l) {
          o.scale += std::abs(static_cast<double>(ai[l]) * static_cast<double>(bj[l]));
        }
      }
    }
  };
  {
    const std::size_t blocks = std::min<std::size_t>(
        std::max(1u, std::thread::hardware_concurrency()), std::max<std::size_t>(all_rows, 1));
    std::vector<std::jthread> pool;
    for (std::size_t t = 1; t < blocks; ++t) {
      pool.emplace_back(rows, all_rows * t / blocks, all_rows * (t + 1) / blocks);
    }
    rows(0, all_rows / blocks);
  }
  if (device && mma) {
    RecipeGemmResult::ModelAgreement agreement;
    agreement.model = mma->name;
    agreement.outputs = out.size();
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double d = out[i].result, m = model[i];
      if (d == m || (std::isnan(d) && std::isnan(m))) continue;
      ++agreement.differing;
      const double distance = std::abs(d - m) / out[i].scale;  // inf for a zero scale
      agreement.max_normwise = std::isfinite(distance) ? std::max(agreement.max_normwise, distance)
                                                       : std::numeric_limits<double>::infinity();
    }
    r.vs_model = agreement;
  }
  ErrorSums total, quantization, accumulation;
  double exact_squares = 0;
  std::size_t outputs = 0;
  for (const Output& o : out) {
    if (!std::isfinite(o.exact)) continue;  // the inputs hold no NaN or infinity: never
    if (!std::isfinite(o.result) || !std::isfinite(o.dequantized)) {
      ++r.nonfinite;
      continue;
    }
    total.add(std::abs(o.result - o.exact), o.scale);
    quantization.add(std::abs(o.dequantized - o.exact), o.scale);
    accumulation.add(std::abs(o.result - o.dequantized), o.scale);
    exact_squares += o.exact * o.exact;
    ++outputs;
  }
  r.total = total.stats(outputs, exact_squares);
  r.quantization = quantization.stats(outputs, exact_squares);
  r.accumulation = accumulation.stats(outputs, exact_squares);
  return r;
}

nlohmann::json to_json(const ErrorStats& s) {
  return {{"max_normwise", s.max_normwise},
          {"mean_normwise", s.mean_normwise},
          {"frobenius", s.frobenius}};
}

nlohmann::json to_json(const OperandQuantization& o) {
  const quant::QuantEvents& e = o.events;
  return {{"role", o.role},
          {"layout", o.layout},
          {"element", o.element},
          {"tiles", o.tiles},
          {"hadamard", o.transformed},
          {"scale", o.scale},
          {"events",
           {{"elements", e.elements},
            {"saturated", e.saturated},
            {"flushed", e.flushed},
            {"subnormal", e.subnormal},
            {"nan", e.nan},
            {"blocks", e.blocks},
            {"blocks_lost", e.blocks_lost}}}};
}

bool known_arch(const std::string& arch) {
  for (const numeric::MmaModel& m : numeric::mma_presets()) {
    if (arch == m.arch) return true;
  }
  return false;
}

}  // namespace

std::string_view op_of(const RecipeCase& c) {
  return c.conv ? "conv2d" : c.batch ? "bmm" : "linear";
}

void set_shape(RecipeCase& c, std::string_view op, const ops::Shape& shape) {
  c.conv.reset();
  c.batch.reset();
  if (op == "conv2d") {
    c.conv = ops::convolution::geometry(shape);
    return;
  }
  const bool bmm = op == "bmm";
  if (!bmm && op != "linear") {
    throw std::invalid_argument(fmt::format("no recipe audit of op '{}'", op));
  }
  const std::size_t first = bmm ? 1 : 0;
  if (bmm) c.batch = shape.sizes.at(0);
  c.m = shape.sizes.at(first);
  c.n = shape.sizes.at(first + 1);
  c.k = shape.sizes.at(first + 2);
}

std::optional<std::string> why_not_runnable(const RecipeCase& c) {
  if (c.conv && c.conv->groups != 1) {
    return fmt::format("{}: a grouped convolution (groups = {}) is not audited under a recipe",
                       c.recipe.name, c.conv->groups);
  }
  if (c.conv) {
    for (const Gemm g : c.gemms) {
      const std::size_t n = ops::convolution::lowered_elements(pass_of(g), *c.conv);
      if (n > ops::kMaxElements) {
        return fmt::format(
            "{}: the {} GEMM's lowered operands hold {} elements, more than the audit's limit of "
            "{} (2^27)",
            c.recipe.name, quant::gemm_name(g), n, ops::kMaxElements);
      }
    }
  }
  if (!c.conv && (c.m == 0 || c.n == 0 || c.k == 0 || c.batch == std::size_t{0})) {
    return fmt::format("{}: the shape {}{}x{}x{} has a zero size", c.recipe.name,
                       c.batch ? fmt::format("{}x", *c.batch) : "", c.m, c.n, c.k);
  }
  if (c.arch != "exact" && !known_arch(c.arch)) {
    return fmt::format(
        "unknown architecture '{}' (exact, volta, turing, ampere, ada, hopper, "
        "blackwell)",
        c.arch);
  }
  for (const Gemm g : c.gemms) {
    const GemmShape s = shape_of(c, g);
    const auto [ra, rb] = quant::gemm_roles(g);
    if (auto why = why_not_tiled(c, g, ra, s.rows, s.k, s.a_layout)) return why;
    if (auto why = why_not_tiled(c, g, rb, s.cols, s.k, s.b_layout)) return why;
    if (c.arch != "exact") {
      const quant::MmaChoice choice = quant::recipe_mma(c.arch, c.recipe, g);
      if (!choice.mma) return choice.reason;
      if (const std::size_t step = quant::instruction_k(*choice.mma); s.k % step != 0) {
        return fmt::format("{}: the {} GEMM on {} takes K in steps of {}: K = {} is not a multiple",
                           c.recipe.name, quant::gemm_name(g), choice.mma->name, step, s.k);
      }
    }
  }
  return std::nullopt;
}

RecipeGemmDims gemm_dims(const RecipeCase& c, Gemm g) {
  const GemmShape s = shape_of(c, g);
  return {s.rows, s.cols, s.k};
}

RecipeCaseResult run_recipe_case(const RecipeCase& c, const RecipeDevice& device) {
  if (auto why = why_not_runnable(c)) throw std::invalid_argument(*why);
  RecipeCaseResult r;
  std::vector<float> x, w, dy;
  if (c.conv) {
    const ops::convolution::Geometry& v = *c.conv;
    x = generate(c, v.batch, v.channels * v.height * v.width, 0);
    w = generate(c, v.filters, v.channels * v.kernel_h * v.kernel_w, 1);
    dy = generate(c, v.batch, v.filters * v.out_h() * v.out_w(), 2);
    r.op = "conv2d";
    r.shape = ops::convolution::to_string(ops::convolution::to_shape(v));
  } else {
    const std::size_t batch = c.batch.value_or(1);  // stacked along the rows
    x = generate(c, batch * c.m, c.k, 0);
    w = generate(c, batch * c.n, c.k, 1);
    dy = generate(c, batch * c.m, c.n, 2);
    r.op = std::string(op_of(c));
    r.shape = c.batch ? fmt::format("{}x{}x{}x{}", *c.batch, c.m, c.n, c.k)
                      : fmt::format("{}x{}x{}", c.m, c.n, c.k);
  }
  r.recipe = c.recipe.name;
  r.arch = c.arch;
  r.distribution = c.distribution;
  r.seed = c.seed;
  for (const Gemm g : c.gemms) {
    r.gemms.push_back(run_gemm(c, g, x, w, dy, device));
    const RecipeGemmResult& last = r.gemms.back();
    if (last.nonfinite != 0) {
      r.breaches.push_back(
          fmt::format("{} {} {}: {} output(s) NaN or infinite where the exact product is finite",
                      r.recipe, r.shape, quant::gemm_name(g), last.nonfinite));
    }
  }
  return r;
}

nlohmann::json to_json(const RecipeCaseResult& r) {
  nlohmann::json gemms = nlohmann::json::array();
  for (const RecipeGemmResult& g : r.gemms) {
    gemms.push_back({{"gemm", quant::gemm_name(g.gemm)},
                     {"output", {g.rows, g.cols}},
                     {"k", g.k},
                     {"multiplied_on", g.multiplied_on},
                     {"promote_interval", g.promote_interval},
                     {"chunks", g.chunks},
                     {"operands", {to_json(g.a), to_json(g.b)}},
                     {"total", to_json(g.total)},
                     {"quantization", to_json(g.quantization)},
                     {"accumulation", to_json(g.accumulation)},
                     {"nonfinite", g.nonfinite}});
    if (!g.device.is_null()) gemms.back()["device"] = g.device;
    if (g.vs_model) {
      gemms.back()["vs_model"] = {{"model", g.vs_model->model},
                                  {"differing", g.vs_model->differing},
                                  {"outputs", g.vs_model->outputs},
                                  {"max_normwise", g.vs_model->max_normwise}};
    }
  }
  return {{"recipe", r.recipe},
          {"arch", r.arch},
          {"op", r.op},
          {"shape", r.shape},
          {"dist", r.distribution},
          {"seed", r.seed},
          {"gemms", std::move(gemms)},
          {"breaches", r.breaches},
          {"status", r.pass() ? "PASS" : "FAIL"}};
}

}  // namespace ampbench::audit
