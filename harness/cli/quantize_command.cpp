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
#include "harness/quant/scaling.hpp"

namespace ampbench::cli {
namespace {

constexpr std::string_view kCommand = "ampbench quantize";
namespace formats = numeric::formats;

// A recipe as it applies to one operand.
struct Plan {
  std::string recipe;
  numeric::Format element;
  std::size_t block_rows = 0;  // 0: the whole dimension
  std::size_t block_cols = 0;
  numeric::Rounding mode = numeric::Rounding::nearest_even;
  quant::ScaleRule rule = quant::ScaleRule::fp32_amax;
  bool pow2 = false;
  std::vector<std::string> notes;  // what the output should say about the choices
};

constexpr std::string_view kRecipes =
    "fp8-delayed, fp8-current, fp8-block, mxfp8, mxfp6, mxfp4, nvfp4";

std::optional<Plan> plan_for(const QuantizeArgs& a, std::string& error) {
  Plan p;
  p.recipe = a.recipe;
  const bool grad = a.role == "dy";
  const bool weight = a.role == "w";
  if (a.recipe == "fp8-delayed" || a.recipe == "fp8-current") {
    // TE's Format.HYBRID (the default): e4m3 forward, e5m2 for gradients; E4M3 throughout.
    p.element = grad && a.fp8_format == "hybrid" ? formats::e5m2 : formats::e4m3;
    p.rule = a.recipe == "fp8-delayed" ? quant::ScaleRule::fp32_given : quant::ScaleRule::fp32_amax;
    p.pow2 = a.scales == "pow2";
  } else if (a.recipe == "fp8-block") {
    p.element = formats::e4m3;
    p.block_rows = weight ? 128 : 1;
    p.block_cols = 128;
    p.pow2 = a.scales != "fp32";  // TE's Float8BlockScaling: power-of-two scales by default
  } else if (a.recipe == "mxfp8" || a.recipe == "mxfp6" || a.recipe == "mxfp4") {
    p.rule = quant::ScaleRule::mx_e8m0;
    p.block_rows = 1;
    p.block_cols = 32;
    const std::string_view fallback = a.recipe == "mxfp8"   ? "e4m3"
                                      : a.recipe == "mxfp6" ? "e3m2"
                                                            : "e2m1";
    const std::string name = a.element.empty() ? std::string(fallback) : a.element;
    const auto allowed = a.recipe == "mxfp8"   ? std::vector<std::string>{"e4m3", "e5m2"}
                         : a.recipe == "mxfp6" ? std::vector<std::string>{"e3m2", "e2m3"}
                                               : std::vector<std::string>{"e2m1"};
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      error = fmt::format("--element {}: {} takes {}", name, a.recipe, fmt::join(allowed, " or "));
      return std::nullopt;
    }
    p.element = *numeric::format_from_name(name);
  } else if (a.recipe == "nvfp4") {
    p.rule = quant::ScaleRule::nvfp4;
    p.element = formats::e2m1;
    p.block_rows = weight ? 16 : 1;
    p.block_cols = 16;
    if (grad) {
      p.mode = numeric::Rounding::stochastic_proportional;
      p.notes.push_back("gradients round stochastically (NVFP4 recipe), seeded by --seed");
    }
    p.notes.push_back(
        "the 16x16 random Hadamard transform of the weight-gradient GEMM's inputs is not applied "
        "here");
  } else {
    error = fmt::format("--recipe: unknown recipe '{}' (known: {})", a.recipe, kRecipes);
    return std::nullopt;
  }
  if (!a.element.empty() && p.rule != quant::ScaleRule::mx_e8m0) {
    error =
        fmt::format("--element goes with the MX recipes; {} fixes its element format", a.recipe);
    return std::nullopt;
  }
  if (!a.mode.empty()) {
    const numeric::RoundingSpec mode = numeric::parse_rounding(a.mode);
    if (!mode.mode) {
      error = "--mode: " + mode.error;
      return std::nullopt;
    }
    p.mode = *mode.mode;
  }
  return p;
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
    return fail(fmt::format("--recipe is required (known: {})", kRecipes));
  }
  if (args.role != "x" && args.role != "w" && args.role != "dy") {
    return fail(fmt::format("--role: unknown role '{}' (x, w or dy)", args.role));
  }
  std::string error;
  std::optional<Plan> plan = plan_for(args, error);
  if (!plan) return fail(error);
  if (plan->rule != quant::ScaleRule::fp32_given &&
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
  for (const auto& [option, recipes] : owners) {
    const bool given = std::find(args.given.begin(), args.given.end(), option) != args.given.end();
    if (given && std::find(recipes.begin(), recipes.end(), args.recipe) == recipes.end()) {
      return fail(fmt::format("{} goes with --recipe {}; {} does not use it", option,
                              fmt::join(recipes, " or "), args.recipe));
    }
  }
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
      const std::size_t default_rows = plan->block_rows == 0 ? 4 : plan->block_rows;
      const std::size_t default_cols = plan->block_cols == 0 ? 32 : 2 * plan->block_cols;
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
  layout.block_rows = plan->block_rows == 0 ? rows : plan->block_rows;
  layout.block_cols = plan->block_cols == 0 ? cols : plan->block_cols;
  layout.mode = plan->mode;
  layout.seed = args.seed;
  const std::string where =
      args.inputs.empty() ? fmt::format("--shape {}x{}", rows, cols) : "--inputs " + args.inputs;

  quant::Quantized q;
  std::optional<float> next_scale;
  std::vector<float> next_history;
  try {
    switch (plan->rule) {
      case quant::ScaleRule::fp32_given: {
        quant::DelayedScalingConfig config;
        config.margin = args.margin;
        config.amax_history_len = args.amax_history_len;
        config.amax_compute_algo = args.amax_compute_algo == "most_recent"
                                       ? quant::AmaxAlgo::most_recent
                                       : quant::AmaxAlgo::max;
        config.fmt_max = quant::max_finite(plan->element);
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
              history->size(), args.margin, args.amax_compute_algo, args.amax_history_len));
        } else {
          scale = quant::current_scale(quant::amax(x), config.fmt_max, false);
          if (config.margin != 0) {
            scale = static_cast<float>(scale * std::ldexp(1.0, -config.margin));
          }
          plan->notes.push_back(
              "no --amax-history: this first step uses current scaling (the scale from this "
              "tensor's own amax); Transformer Engine itself starts from scale 1");
        }
        q = quant::quantize_with_scale(x, layout, plan->element, scale);
        // This step's amax enters the history; the scale for the next step.
        if (args.amax_history.empty()) state = quant::DelayedScaling(config, scale);
        state.record(static_cast<float>(quant::amax(x)));
        state.update();
        next_scale = state.scale();
        break;
      }
      case quant::ScaleRule::fp32_amax:
        q = quant::quantize_current(x, layout, plan->element, plan->pow2);
        break;
      case quant::ScaleRule::mx_e8m0: q = quant::quantize_mx(x, layout, plan->element); break;
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
    }
    nlohmann::json doc = {
        {"recipe", plan->recipe},
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
    out << doc.dump(2) << '\n';
    return kExitOk;
  }

  out << fmt::format("recipe {} role {}: {} elements ({}), {}x{} blocks, {} scales, tensor {}x{}\n",
                     plan->recipe, args.role, q.element.name, numeric::rounding_name(q.mode),
                     q.block_rows, q.block_cols, scale_format_of(q.rule), rows, cols);
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
