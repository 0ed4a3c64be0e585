// ampbench quantize: a tensor quantized as a training recipe would quantize one GEMM operand (x,
// w or dy), with the scales, every element's bits and value, the dequantized values, their error
// and the events (docs/scaling.md).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/inputs/distributions.hpp"
#include "harness/inputs/tensor_file.hpp"
#include "harness/io/json_arrays.hpp"
#include "harness/io/number_text.hpp"
#include "harness/numeric/options.hpp"
#include "harness/quant/hadamard.hpp"
#include "harness/quant/recipe.hpp"
#include "harness/quant/scaling.hpp"

namespace ampbench::cli {
namespace {

constexpr std::string_view kCommand = "ampbench quantize";
namespace formats = numeric::formats;

// A recipe as it applies to one operand of one GEMM.
struct Plan {
  quant::Recipe recipe;
  quant::Role role = quant::Role::x;
  quant::Gemm gemm = quant::Gemm::fprop;
  std::vector<std::string> notes;  // what the output should say about the choices

  const quant::OperandRecipe& op() const { return recipe.operand(role); }
  quant::OperandRecipe& op() { return recipe.operand(role); }
};

bool given(const QuantizeArgs& a, std::string_view option) {
  return std::find(a.given.begin(), a.given.end(), option) != a.given.end();
}

// The recipe (a built-in or a file), the GEMM, and the options that pick within the recipe.
std::optional<Plan> plan_for(const QuantizeArgs& a, std::string& error) {
  Plan p;
  p.role = *quant::role_from_name(a.role);
  try {
    p.recipe = quant::recipe_by_name_or_file(a.recipe);
  } catch (const quant::RecipeError& e) {
    error = e.source().empty() ? fmt::format("--recipe: {}", e.what()) : e.what();
    return std::nullopt;
  }
  p.gemm = quant::default_gemm(p.role);
  if (!a.gemm.empty()) {
    const auto gemm = quant::gemm_from_name(a.gemm);
    if (!gemm) {
      error = fmt::format("--gemm: unknown GEMM '{}' (fprop, dgrad or wgrad)", a.gemm);
      return std::nullopt;
    }
    if (!quant::enters(p.role, *gemm)) {
      error = fmt::format(
          "--gemm {}: {} is not an operand of it (fprop y = x w^T, dgrad dx = dy w, wgrad "
          "dw = dy^T x)",
          a.gemm, a.role);
      return std::nullopt;
    }
    p.gemm = *gemm;
  }
  const std::string& name = p.recipe.name;
  if (!a.element.empty()) {
    const auto& allowed = p.recipe.element_options;
    if (allowed.empty()) {
      error = fmt::format("--element goes with the MX recipes; {} fixes its element format", name);
      return std::nullopt;
    }
    const auto chosen = std::find_if(allowed.begin(), allowed.end(),
                                     [&](const auto& f) { return a.element == f.name; });
    if (chosen == allowed.end()) {
      std::vector<std::string_view> names;
      for (const numeric::Format& f : allowed) names.emplace_back(f.name);
      error = fmt::format("--element {}: {} takes {}", a.element, name, fmt::join(names, " or "));
      return std::nullopt;
    }
    p.op().element = *chosen;
  }
  if (p.role == quant::Role::dy && p.op().scale == quant::ScaleChoice::nvfp4 &&
      numeric::is_stochastic(p.op().rounding)) {
    p.notes.push_back("gradients round stochastically (NVFP4 recipe), seeded by --seed");
  } else if (numeric::is_stochastic(p.op().rounding)) {
    p.notes.push_back(
        fmt::format("{} rounds stochastically (recipe {}), seeded by --seed", a.role, name));
  }
  if (!a.mode.empty()) {
    const numeric::RoundingSpec mode = numeric::parse_rounding(a.mode);
    if (!mode.mode) {
      error = "--mode: " + mode.error;
      return std::nullopt;
    }
    p.op().rounding = *mode.mode;
  }
  return p;
}

// The options that change a recipe's own parameters, once they are known to go with it.
std::optional<std::string> apply_recipe_options(const QuantizeArgs& a, Plan& p) {
  quant::Recipe& r = p.recipe;
  if (given(a, "--fp8-format")) {
    // TE's Format.HYBRID: e5m2 for gradients; E4M3 throughout.
    r.operand(quant::Role::dy).element =
        a.fp8_format == "hybrid" ? numeric::formats::e5m2 : numeric::formats::e4m3;
  }
  if (given(a, "--scales")) {
    for (quant::OperandRecipe& o : r.operands) {
      if (o.scale == quant::ScaleChoice::current || o.scale == quant::ScaleChoice::pow2) {
        o.scale = a.scales == "pow2" ? quant::ScaleChoice::pow2 : quant::ScaleChoice::current;
      }
    }
  }
  if (given(a, "--margin")) r.delayed.margin = a.margin;
  if (given(a, "--amax-history-len")) r.delayed.amax_history_len = a.amax_history_len;
  if (given(a, "--amax-compute-algo")) {
    r.delayed.amax_compute_algo =
        a.amax_compute_algo == "most_recent" ? quant::AmaxAlgo::most_recent : quant::AmaxAlgo::max;
  }
  const bool transforms = quant::applies_hadamard(r, p.role, p.gemm);
  if (given(a, "--hadamard-seed")) {
    if (!transforms) {
      return fmt::format(
          "--hadamard-seed goes with the Hadamard transform: recipe {} applies none to {} in the "
          "{} GEMM (nvfp4 transforms x and dy with --gemm wgrad)",
          r.name, a.role, quant::gemm_name(p.gemm));
    }
    r.hadamard_seed = a.hadamard_seed;
  }
  if (transforms) {
    p.notes.push_back(fmt::format(
        "the 16x16 random Hadamard transform is applied along K (the weight-gradient GEMM's "
        "reduction dimension) in runs of 16 columns, signs 0x{:04x} ({}); the inputs below are "
        "the transformed values",
        quant::hadamard_signs(r.hadamard_seed),
        r.hadamard_seed ? fmt::format("seed {}", *r.hadamard_seed)
                        : std::string("Transformer Engine's fixed wgrad sign vector")));
  } else if (r.operand(quant::Role::x).hadamard) {
    p.notes.push_back(
        "the 16x16 random Hadamard transform goes with the weight-gradient GEMM's inputs (--gemm "
        "wgrad with --role x or dy); this operand is not transformed");
  }
  return std::nullopt;
}

// "R" or "RxC" (a vector is one row).
std::optional<std::vector<std::size_t>> parse_dims(std::string_view text) {
  std::vector<std::size_t> dims;
  while (true) {
    const std::size_t x = text.find('x');
    const std::string_view part = text.substr(0, x);
    std::size_t v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || v == 0 ||
        v > (std::size_t{1} << 24)) {
      return std::nullopt;
    }
    dims.push_back(v);
    if (x == std::string_view::npos) break;
    text = text.substr(x + 1);
  }
  if (dims.size() > 2) return std::nullopt;
  if (dims.size() == 1) dims.insert(dims.begin(), 1);
  return dims;
}

std::string hex(double v) {
  return fmt::format("{:a}", v);
}

std::string scale_format_of(quant::ScaleRule rule) {
  switch (rule) {
    case quant::ScaleRule::fp32_given:
    case quant::ScaleRule::fp32_amax: return "fp32";
    case quant::ScaleRule::mx_e8m0: return "ue8m0";
    case quant::ScaleRule::nvfp4: return "ue4m3 blocks, fp32 tensor";
  }
  return "?";
}

// Reads comma-separated binary32 amaxes (oldest first).
std::optional<std::vector<float>> parse_history(const std::string& text, std::string& error) {
  std::vector<float> out;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const auto x = io::parse_number(item, formats::fp32);
    if (!x || !x->exact || !(x->rounded.value >= 0)) {
      error = fmt::format(
          "--amax-history: '{}' is not a non-negative binary32 value (amaxes are fp32)", item);
      return std::nullopt;
    }
    out.push_back(static_cast<float>(x->rounded.value));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return out;
}

}  // namespace

int run_quantize(const QuantizeArgs& args, std::ostream& out, std::ostream& err) {
  const auto fail = [&](const std::string& message) {
    err << fmt::format("{}: {}\n", kCommand, message);
    return kExitUsage;
  };
  if (args.recipe.empty()) {
    return fail(fmt::format("--recipe is required (known: {}; or a FILE.toml)",
                            quant::builtin_recipe_names()));
  }
  if (args.role != "x" && args.role != "w" && args.role != "dy") {
    return fail(fmt::format("--role: unknown role '{}' (x, w or dy)", args.role));
  }
  std::string error;
  std::optional<Plan> plan = plan_for(args, error);
  if (!plan) return fail(error);
  if (plan->op().scale != quant::ScaleChoice::delayed &&
      (!args.amax_history.empty() || args.scale.has_value())) {
    return fail("--amax-history and --scale go with --recipe fp8-delayed");
  }
  // A recipe's own options, refused with the others rather than ignored.
  const std::pair<std::string_view, std::vector<std::string_view>> owners[] = {
      {"--fp8-format", {"fp8-delayed", "fp8-current"}},
      {"--scales", {"fp8-current", "fp8-block"}},
      {"--margin", {"fp8-delayed"}},
      {"--amax-history-len", {"fp8-delayed"}},
      {"--amax-compute-algo", {"fp8-delayed"}}};
  // A user recipe takes the options of the built-in it starts from.
  for (const auto& [option, recipes] : owners) {
    if (given(args, option) &&
        std::find(recipes.begin(), recipes.end(), plan->recipe.base) == recipes.end()) {
      return fail(fmt::format("{} goes with --recipe {}; {} does not use it", option,
                              fmt::join(recipes, " or "), plan->recipe.name));
    }
  }
  if (const auto bad = apply_recipe_options(args, *plan)) return fail(*bad);
  if (args.print_recipe) {
    // Ready to edit and load with --recipe FILE.toml: a built-in's name is taken, so it is renamed.
    quant::Recipe printed = plan->recipe;
    if (quant::find_recipe(printed.name) != nullptr) printed.name = "my-" + printed.name;
    out << quant::to_toml(printed);
    return kExitOk;
  }
  const quant::OperandRecipe op = plan->op();
  const quant::ScaleRule rule = quant::scale_rule_of(op.scale);
  const std::size_t block_rows = op.granularity == quant::Granularity::block  ? op.block
                                 : op.granularity == quant::Granularity::tile ? 1
                                                                              : 0;
  const std::size_t block_cols = op.block;  // 0 for tensor: the whole dimension
  if (!args.inputs.empty() && (!args.dist.empty() || !args.shape.empty())) {
    return fail("--inputs gives the tensor: leave out --dist and --shape");
  }

  // The tensor: a file's values, or a distribution's, rounded to binary32 as a framework holds
  // them.
  inputs::Tensor tensor;
  try {
    if (!args.inputs.empty()) {
      const inputs::Loaded loaded = inputs::read_tensor_file(args.inputs, formats::fp32);
      if (loaded.report.overflowed != 0) {
        return fail(fmt::format("--inputs {}: {} values lie beyond binary32's range", args.inputs,
                                loaded.report.overflowed));
      }
      tensor = loaded.tensor;
      if (tensor.shape.size() > 2) {
        return fail(fmt::format("--inputs {}: shape {} has more than 2 dimensions", args.inputs,
                                inputs::shape_string(tensor.shape)));
      }
      if (loaded.report.changed != 0) {
        plan->notes.push_back(fmt::format("{} input values were rounded to binary32 (nearest)",
                                          loaded.report.changed));
      }
    } else {
      const std::size_t default_rows = block_rows == 0 ? 4 : block_rows;
      const std::size_t default_cols = block_cols == 0 ? 32 : 2 * block_cols;
      std::vector<std::size_t> dims{default_rows, default_cols};
      if (!args.shape.empty()) {
        const auto parsed = parse_dims(args.shape);
        if (!parsed) {
          return fail(
              fmt::format("--shape {}: expected COLS or ROWSxCOLS, each in [1, 2^24]", args.shape));
        }
        dims = *parsed;
      }
      if (dims[0] * dims[1] > (std::size_t{1} << 24)) {
        return fail(fmt::format("--shape {}: more than 2^24 elements", args.shape));
      }
      tensor =
          inputs::generate(args.dist.empty() ? "normal" : args.dist, dims, formats::fp32, args.seed)
              .tensor;
    }
  } catch (const inputs::SpecError& e) {
    return fail(fmt::format("--dist: {}", e.what()));
  } catch (const io::InputError& e) {
    return fail(fmt::format("--inputs {}", e.what()));
  }
  const std::size_t rows = tensor.shape.size() == 2 ? tensor.shape[0] : 1;
  const std::size_t cols = tensor.shape.empty() ? 1 : tensor.shape.back();
  std::vector<float> x(tensor.data.begin(), tensor.data.end());  // binary32 values: exact

  quant::Layout layout;
  layout.rows = rows;
  layout.cols = cols;
  layout.block_rows = block_rows == 0 ? rows : block_rows;
  layout.block_cols = block_cols == 0 ? cols : block_cols;
  layout.mode = op.rounding;
  layout.seed = args.seed;
  const std::string where =
      args.inputs.empty() ? fmt::format("--shape {}x{}", rows, cols) : "--inputs " + args.inputs;

  // The weight-gradient GEMM's inputs under NVFP4: the transform along K, before the quantizer
  // (which then takes the amax of the transformed tensor, as TE's post-RHT amax).
  const bool transformed = quant::applies_hadamard(plan->recipe, plan->role, plan->gemm);
  const std::uint16_t signs = quant::hadamard_signs(plan->recipe.hadamard_seed);
  std::vector<float> original;
  if (transformed) {
    try {
      original = x;
      x = quant::hadamard_transform(original, rows, cols, signs);
    } catch (const std::invalid_argument& e) {
      return fail(fmt::format("{}: {}", where, e.what()));
    }
  }

  quant::Quantized q;
  std::optional<float> next_scale;
  std::vector<float> next_history;
  try {
    switch (rule) {
      case quant::ScaleRule::fp32_given: {
        const quant::DelayedParams& delayed = plan->recipe.delayed;
        quant::DelayedScalingConfig config;
        config.margin = delayed.margin;
        config.amax_history_len = delayed.amax_history_len;
        config.amax_compute_algo = delayed.amax_compute_algo;
        config.fmt_max = quant::max_finite(op.element);
        quant::DelayedScaling state(config);
        float scale = 0;
        if (args.scale) {
          const auto s = io::parse_number(*args.scale, formats::fp32);
          if (!s || !s->exact || !(s->rounded.value > 0) || std::isinf(s->rounded.value)) {
            return fail(fmt::format(
                "--scale {}: fp32 cannot hold this scale exactly (a scale is a positive finite "
                "binary32 value{})",
                *args.scale,
                s && std::isfinite(s->rounded.value) && s->rounded.value > 0
                    ? ", nearest " + hex(s->rounded.value)
                    : ""));
          }
          scale = static_cast<float>(s->rounded.value);
          plan->notes.push_back("the scale given by --scale");
        } else if (!args.amax_history.empty()) {
          const auto history = parse_history(args.amax_history, error);
          if (!history) return fail(error);
          for (const float a : *history) {
            state.record(a);
            state.update();
          }
          scale = state.scale();
          plan->notes.push_back(fmt::format(
              "the scale from {} earlier steps' amaxes (--amax-history), margin {}, {} over the "
              "last {}",
              history->size(), delayed.margin,
              delayed.amax_compute_algo == quant::AmaxAlgo::max ? "max" : "most_recent",
              delayed.amax_history_len));
        } else {
          scale = quant::current_scale(quant::amax(x), config.fmt_max, false);
          if (config.margin != 0) {
            scale = static_cast<float>(scale * std::ldexp(1.0, -config.margin));
          }
          plan->notes.push_back(
              "no --amax-history: this first step uses current scaling (the scale from this "
              "tensor's own amax); Transformer Engine itself starts from scale 1");
        }
        q = quant::quantize_with_scale(x, layout, op.element, scale);
        // This step's amax enters the history; the scale for the next step.
        if (args.amax_history.empty()) state = quant::DelayedScaling(config, scale);
        state.record(static_cast<float>(quant::amax(x)));
        state.update();
        next_scale = state.scale();
        break;
      }
      case quant::ScaleRule::fp32_amax:
        q = quant::quantize_current(x, layout, op.element, op.scale == quant::ScaleChoice::pow2);
        break;
      case quant::ScaleRule::mx_e8m0:
        q = quant::quantize_mx(x, layout, op.element,
                               op.scale == quant::ScaleChoice::mx_ceil ? quant::MxScale::round_up
                                                                       : quant::MxScale::ocp);
        break;
      case quant::ScaleRule::nvfp4: q = quant::quantize_nvfp4(x, layout); break;
    }
  } catch (const std::invalid_argument& e) {
    return fail(fmt::format("{}: {}", where, e.what()));
  }

  const int hex_digits = (q.element.total_bits() + 3) / 4;
  // dequantized - input in binary64 (exact unless their exponents lie far apart).
  const auto error_of = [&](std::size_t i) { return q.dequantized[i] - x[i]; };
  if (args.json) {
    nlohmann::json tiles = nlohmann::json::array();
    for (const quant::Tile& t : q.tiles) {
      tiles.push_back({{"row", t.row},
                       {"col", t.col},
                       {"rows", t.rows},
                       {"cols", t.cols},
                       {"amax", hex(t.amax)},
                       {"scale", hex(t.scale)},
                       {"scale_bits", fmt::format("0x{:x}", t.scale_bits)},
                       {"decode_scale", hex(t.decode_scale)},
                       {"lost", t.lost}});
    }
    nlohmann::json elements = nlohmann::json::array();
    for (std::size_t i = 0; i < x.size(); ++i) {
      elements.push_back({{"input", hex(x[i])},
                          {"bits", fmt::format("0x{:0{}x}", q.bits[i], hex_digits)},
                          {"value", hex(q.values[i])},
                          {"dequantized", hex(q.dequantized[i])},
                          {"error", hex(error_of(i))},
                          {"event", numeric::event_name(q.element_events[i])}});
      if (transformed) elements.back()["original"] = hex(original[i]);
    }
    nlohmann::json doc = {
        {"recipe", plan->recipe.name},
        {"role", args.role},
        {"element", q.element.name},
        {"mode", numeric::rounding_name(q.mode)},
        {"shape", {rows, cols}},
        {"block", {q.block_rows, q.block_cols}},
        {"scale_format", scale_format_of(q.rule)},
        {"tensor_amax", hex(q.tensor_amax)},
        {"tiles", tiles},
        {"elements", elements},
        {"events",
         {{"elements", q.events.elements},
          {"saturated", q.events.saturated},
          {"flushed", q.events.flushed},
          {"subnormal", q.events.subnormal},
          {"nan", q.events.nan},
          {"blocks", q.events.blocks},
          {"blocks_lost", q.events.blocks_lost}}},
        {"notes", plan->notes},
    };
    if (q.rule == quant::ScaleRule::nvfp4) {
      doc["global_scale"] = hex(q.global_scale);
      doc["global_decode"] = hex(q.global_decode);
    }
    if (next_scale) doc["next_scale"] = hex(*next_scale);
    if (plan->gemm != quant::default_gemm(plan->role)) doc["gemm"] = quant::gemm_name(plan->gemm);
    if (transformed) {
      doc["hadamard"] = {
          {"applied", true},
          {"size", quant::kHadamardSize},
          {"along", "K (columns)"},
          {"signs", fmt::format("0x{:04x}", signs)},
          {"seed", plan->recipe.hadamard_seed ? nlohmann::json(*plan->recipe.hadamard_seed)
                                              : nlohmann::json(nullptr)}};
    }
    out << doc.dump(2) << '\n';
    return kExitOk;
  }

  out << fmt::format(
      "recipe {} role {}{}: {} elements ({}), {}x{} blocks, {} scales, tensor {}x{}\n",
      plan->recipe.name, args.role,
      plan->gemm == quant::default_gemm(plan->role)
          ? ""
          : fmt::format(" ({})", quant::gemm_name(plan->gemm)),
      q.element.name, numeric::rounding_name(q.mode), q.block_rows, q.block_cols,
      scale_format_of(q.rule), rows, cols);
  for (const std::string& note : plan->notes) out << "note: " << note << '\n';
  out << fmt::format("tensor amax {}\n", hex(q.tensor_amax));
  if (q.rule == quant::ScaleRule::nvfp4) {
    out << fmt::format("tensor scale S_enc {} (decode {})\n", hex(q.global_scale),
                       hex(q.global_decode));
  }
  out << fmt::format("\n{:>6} {:>6} {:>16} {:>16} {:>12} {:>16}  {}\n", "row", "col", "amax",
                     "scale", "scale bits", "decode scale", "");
  for (const quant::Tile& t : q.tiles) {
    out << fmt::format("{:>6} {:>6} {:>16} {:>16} {:>12} {:>16}  {}\n", t.row, t.col, hex(t.amax),
                       hex(t.scale), fmt::format("0x{:x}", t.scale_bits), hex(t.decode_scale),
                       t.lost ? "block lost" : "");
  }
  out << fmt::format("\n{:>6} {:>6} {:>16} {:>6} {:>12} {:>16} {:>16}  {}\n", "row", "col", "input",
                     "bits", "value", "dequantized", "error", "event");
  for (std::size_t i = 0; i < x.size(); ++i) {
    out << fmt::format("{:>6} {:>6} {:>16} {:>6} {:>12} {:>16} {:>16}  {}\n", i / cols, i % cols,
                       hex(x[i]), fmt::format("0x{:0{}x}", q.bits[i], hex_digits), hex(q.values[i]),
                       hex(q.dequantized[i]), hex(error_of(i)),
                       numeric::event_name(q.element_events[i]));
  }
  out << fmt::format(
      "\nevents: {} elements, {} saturated, {} flushed to zero, {} subnormal, {} NaN; {} blocks, "
      "{} lost\n",
      q.events.elements, q.events.saturated, q.events.flushed, q.events.subnormal, q.events.nan,
      q.events.blocks, q.events.blocks_lost);
  if (next_scale) out << fmt::format("next step's scale {}\n", hex(*next_scale));
  return kExitOk;
}

}  // namespace ampbench::cli
