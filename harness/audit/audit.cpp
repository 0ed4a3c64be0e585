#include "harness/audit/audit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/inputs/distributions.hpp"
#include "harness/numeric/options.hpp"
#include "harness/ops/autocast.hpp"
#include "reference/exact/uint128.hpp"

namespace ampbench::audit {

numeric::Format held_format(const ops::Operand& operand, const policy::OpPrecision& precision) {
  return ops::conversion(operand, precision).format;
}

Generated generate_operands(const Case& c, const policy::OpPrecision& precision) {
  Generated g;
  const auto operands = ops::operands(*c.op, c.shape);
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const auto& operand = operands[k];
    if (operand.optional) {  // gemm's C: the audit measures A B alone
      g.inputs.values.emplace_back();
      g.inputs.indices.emplace_back();
      continue;
    }
    const std::uint64_t seed = inputs::operand_seed(c.seed, k);
    OperandRecord record{operand.name, "", seed};
    std::vector<double> values;
    std::vector<std::int64_t> indices;
    if (operand.is_index) {
      // Uniform in [0, limit): the high half of a 64 x 64-bit product (bias below limit / 2^64).
      const std::size_t n = ops::element_count(operand.shape);
      indices.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        const auto wide =
            static_cast<reference::uint128>(numeric::splitmix64(seed, i)) * operand.index_limit;
        indices[i] = static_cast<std::int64_t>(wide >> 64);
      }
      record.source = fmt::format("uniform integers in [0, {})", operand.index_limit);
    } else {
      const std::string spec = operand.role == ops::Role::data ? c.distribution
                               : operand.name == "gamma" ? std::string("normal:mu=1,sigma=0.25")
                                                         : std::string("normal");
      inputs::Generated generated =
          inputs::generate(std::string_view(spec), operand.shape, held_format(operand, precision),
                           seed, precision.input_mode);
      values = std::move(generated.tensor.data);
      record.source = generated.tensor.source;
      record.changed = generated.report.changed;
      record.flushed = generated.report.flushed;
      record.overflowed = generated.report.overflowed;
    }
    g.inputs.values.push_back(std::move(values));
    g.inputs.indices.push_back(std::move(indices));
    g.records.push_back(std::move(record));
  }
  return g;
}

policy::OpPrecision precision_of(const policy::Policy& p, const ops::OpInfo& op) {
  if (op.op == ops::Op::cast) {
    // The conversion the policy applies to fp32 data before its matmuls (autocast's cached_cast,
    // the tf32 conversion of cuBLAS, model.half()): fp32 to the format gemm reads, in the mode
    // it is read with. A policy's own "cast" entry is PyTorch's .to(), whose target is an
    // argument: it says nothing about which conversion to audit.
    const policy::OpPrecision gemm = p.precision(policy::Op::gemm);
    policy::OpPrecision cast;
    cast.input = numeric::formats::fp32;
    cast.compute = cast.accumulate = cast.output = gemm.input;
    cast.mode = gemm.input_mode;
    cast.source = fmt::format("fp32 to the input format of gemm ({})", gemm.source);
    return cast;
  }
  const auto policy_op = policy::op_from_name(op.precision_op());
  if (!policy_op) throw ops::OpError(fmt::format("op {} has no precision class", op.name));
  return p.precision(*policy_op);
}

backends::cpu::Arithmetic arithmetic_of(const policy::OpPrecision& precision) {
  return {precision.compute, precision.accumulate, precision.output, precision.mode};
}

std::optional<std::string> why_not_runnable(const ops::OpInfo& op, const policy::Policy& p,
                                            bool on_mma) {
  if (on_mma && ops::runs_on_mma(op)) return std::nullopt;
  if (auto problem = backends::cpu::why_not_emulable(arithmetic_of(precision_of(p, op)))) {
    return fmt::format("policy {}, op {}: {}", p.name, op.name, *problem);
  }
  return std::nullopt;
}

namespace {

// The record of a case whose output (at the reference's positions) has been computed.
CaseResult judge(const Case& c, const policy::OpPrecision& precision, Generated generated,
                 const ops::Reference& ref, std::span<const double> computed,
                 std::vector<double> bounds, const backends::cpu::Events& events,
                 std::string backend, const std::vector<Budget>& budgets) {
  CaseResult r;
  r.op = std::string(c.op->name);
  r.policy = c.policy.name;
  r.backend = std::move(backend);
  r.shape = ops::to_string(c.shape);
  r.distribution = c.distribution;
  r.seed = c.seed;
  r.precision = precision;
  r.operands = std::move(generated.records);
  r.outputs = ops::element_count(ops::output_shape(*c.op, c.shape));
  r.references = ref.positions.size();
  r.summary = metrics::summarize(precision.output, computed, ref.rounded, ref.nearest,
                                 metrics::ElementBounds{std::move(bounds), std::nullopt});
  r.summary.output_events = events.output;
  r.summary.intermediate_events = events.intermediate;
  r.breaches = check(budgets, r.op, r.policy, r.backend, r.summary);
  return r;
}

}  // namespace

CaseResult run_case(const Case& c, const std::vector<Budget>& budgets) {
  const policy::OpPrecision precision = precision_of(c.policy, *c.op);
  const backends::cpu::Arithmetic arithmetic = arithmetic_of(precision);
  Generated generated = generate_operands(c, precision);

  const bool on_mma = c.mma && ops::runs_on_mma(*c.op);
  const std::size_t outputs = ops::element_count(ops::output_shape(*c.op, c.shape));
  const bool sampled = c.samples > 0 && c.samples < outputs;
  const ops::Reference ref = ops::reference(*c.op, c.shape, generated.inputs, precision.output,
                                            precision.mode, c.samples, c.seed);
  // A sampled case computes only the sampled outputs (every output is computed independently of
  // the others, so each is the full run's); a full case computes everything.
  ops::CpuRun run;
  if (on_mma) {
    run = ops::run_cpu_mma(*c.op, c.shape, *c.mma, precision.output, precision.mode,
                           generated.inputs);
  } else if (sampled) {
    run = ops::run_cpu_at(*c.op, c.shape, arithmetic, c.summation, generated.inputs, ref.positions);
  } else {
    run = ops::run_cpu(*c.op, c.shape, arithmetic, c.summation, generated.inputs);
  }
  std::vector<double> computed;
  computed.reserve(ref.positions.size());
  for (std::size_t e = 0; e < ref.positions.size(); ++e) {
    computed.push_back(!on_mma && sampled ? run.output.at(e) : run.output.at(ref.positions[e]));
  }
  // The recursive-summation bound does not describe a Tensor Core's truncating alignment, and no
  // block-FMA bound covering it is implemented (docs/metrics.md): an MMA case reports none.
  std::vector<double> bounds = on_mma ? std::vector<double>{}
                                      : ops::error_bounds(*c.op, c.shape, arithmetic, c.summation,
                                                          generated.inputs, ref.positions);
  CaseResult r = judge(c, precision, std::move(generated), ref, computed, std::move(bounds),
                       run.events, "cpu", budgets);
  if (on_mma) r.mma = c.mma->name;
  return r;
}

CaseResult run_kernel_case(const Case& c, const Kernel& kernel, std::string backend,
                           const std::vector<Budget>& budgets) {
  const policy::OpPrecision precision = precision_of(c.policy, *c.op);
  Generated generated = generate_operands(c, precision);
  const std::size_t outputs = ops::element_count(ops::output_shape(*c.op, c.shape));
  const std::vector<double> output = kernel(generated.inputs);
  if (output.size() != outputs) {
    throw std::invalid_argument(
        fmt::format("{} {} ({}): the kernel gave {} output values, the op "
                    "has {}",
                    c.op->name, ops::to_string(c.shape), backend, output.size(), outputs));
  }
  const ops::Reference ref = ops::reference(*c.op, c.shape, generated.inputs, precision.output,
                                            precision.mode, c.samples, c.seed);
  std::vector<double> computed;
  computed.reserve(ref.positions.size());
  for (const std::size_t position : ref.positions) computed.push_back(output[position]);
  // Sequential summation's bound holds for any order of the additions (Higham, eq. (4.3) and
  // Lemma 3.1): the kernel's order is unknown, its formats are the policy's.
  std::vector<double> bounds =
      ops::error_bounds(*c.op, c.shape, arithmetic_of(precision),
                        backends::cpu::Summation::sequential, generated.inputs, ref.positions);
  return judge(c, precision, std::move(generated), ref, computed, std::move(bounds), {},
               std::move(backend), budgets);
}

numeric::MmaModel mma_for(const std::string& name, const policy::Policy& p) {
  const numeric::Format input = p.precision(policy::Op::gemm).input;
  if (auto named = numeric::mma_model_named(name)) {
    if (!numeric::same_values(named->input, input)) {
      throw std::invalid_argument(
          fmt::format("{}: the preset takes {} inputs; policy {} gives gemm {}", name,
                      named->input.name, p.name, input.name));
    }
    return *named;
  }
  if (auto model = numeric::mma_model(name, input)) return *model;
  std::string presets;
  for (const auto& m : numeric::mma_presets()) {
    presets += fmt::format("{}{}", presets.empty() ? "" : " ", m.name);
  }
  throw std::invalid_argument(fmt::format(
      "{}: no Tensor Core model of that name, or none for {} inputs (policy {}); architectures: "
      "volta turing ampere ada hopper blackwell; presets: {}",
      name, input.name, p.name, presets));
}

nlohmann::json to_json(const CaseResult& r) {
  nlohmann::json j = metrics::to_json(r.summary);
  j["op"] = r.op;
  j["policy"] = r.policy;
  j["backend"] = r.backend;
  j["shape"] = r.shape;
  j["dist"] = r.distribution;
  j["seed"] = r.seed;
  j["formats"] = {{"input", r.precision.input.name},
                  {"compute", r.precision.compute.name},
                  {"accumulate", r.precision.accumulate.name},
                  {"output", r.precision.output.name},
                  {"mode", numeric::rounding_name(r.precision.mode)}};
  if (!r.mma.empty()) j["mma"] = r.mma;
  j["outputs"] = r.outputs;
  j["reference_sample"] = r.references;
  nlohmann::json operands = nlohmann::json::array();
  for (const auto& o : r.operands) {
    operands.push_back({{"name", o.name},
                        {"source", o.source},
                        {"seed", o.seed},
                        {"changed_by_rounding", o.changed},
                        {"flushed", o.flushed},
                        {"overflowed", o.overflowed}});
  }
  j["inputs"] = operands;
  nlohmann::json breaches = nlohmann::json::array();
  for (const auto& b : r.breaches) breaches.push_back(b.message);
  j["breaches"] = breaches;
  j["status"] = r.pass() ? "PASS" : "FAIL";
  return j;
}

OperandSet read_operands(const ops::OpInfo& op, const policy::OpPrecision& precision,
                         const TensorReader& read) {
  OperandSet set;
  const auto tensors = read(inputs::Conversion(precision.input, precision.input_mode));
  const auto names = ops::operands(op, ops::parse_shape(op, op.default_shape));
  // Operand k's tensor rounded to the format it is held in: an operand held in another format than
  // the input's (gemm's C in the accumulation format, linear's bias in the output format) is read
  // again, rounded to that. A stochastic input mode gives each operand a stream of its own,
  // conversion_stream(operand_seed(0, k)), as generated operands have (there is no seed here: 0),
  // so that no two operands round with the same draws.
  const bool stochastic = numeric::is_stochastic(precision.input_mode);
  std::map<std::pair<ops::HeldIn, std::size_t>, std::map<std::string, inputs::Loaded>> reread;
  const auto held = [&](const ops::Operand& o,
                        std::size_t k) -> const std::map<std::string, inputs::Loaded>& {
    const numeric::Format f = held_format(o, precision);
    if (!stochastic && numeric::same_format(f, precision.input)) return tensors;
    const auto key = std::pair{o.held_in, stochastic ? k : 0};
    auto found = reread.find(key);
    if (found == reread.end()) {
      const std::uint64_t stream =
          stochastic ? inputs::conversion_stream(inputs::operand_seed(0, k)) : 0;
      found = reread.emplace(key, read(inputs::Conversion(f, precision.input_mode, stream))).first;
    }
    return found->second;
  };
  for (const auto& [name, loaded] : tensors) {
    bool known = false;
    for (const auto& o : names) known = known || o.name == name;
    if (!known) {
      std::string list;
      for (const auto& o : names) list += fmt::format("{}{}", list.empty() ? "" : ", ", o.name);
      throw ops::OpError(fmt::format("unknown operand '{}' ({} takes {})", name, op.name, list));
    }
  }
  std::vector<std::vector<std::size_t>> shapes;  // of the required operands
  for (std::size_t k = 0; k < names.size(); ++k) {
    const ops::Operand& o = names[k];
    const auto& source = held(o, k);
    if (o.optional) {
      const auto it = source.find(o.name);
      if (it == source.end()) {
        set.inputs.values.emplace_back();
      } else {
        set.inputs.values.push_back(it->second.tensor.data);
        set.rounded += it->second.report.changed;
      }
      set.inputs.indices.emplace_back();
      continue;
    }
    const auto it = source.find(o.name);
    if (it == source.end()) throw ops::OpError(fmt::format("missing operand '{}'", o.name));
    shapes.push_back(it->second.tensor.shape);
    std::vector<std::int64_t> indices;
    if (o.is_index) {
      for (std::size_t i = 0; i < it->second.tensor.data.size(); ++i) {
        const double v = it->second.tensor.data[i];
        if (!(v >= 0 && v == std::floor(v) && v < 9.0e15)) {
          throw ops::OpError(fmt::format("{}[{}] = {} is not a class index", o.name, i, v));
        }
        indices.push_back(static_cast<std::int64_t>(v));
      }
      set.inputs.values.emplace_back();
    } else {
      set.inputs.values.push_back(it->second.tensor.data);
      set.rounded += it->second.report.changed;
    }
    set.inputs.indices.push_back(std::move(indices));
  }
  set.shape = ops::shape_from_operands(op, shapes);
  const auto expected = ops::operands(op, set.shape);
  for (std::size_t k = 0; k < names.size(); ++k) {
    const auto& source = held(names[k], k);
    const auto it = source.find(names[k].name);
    if (names[k].optional && it != source.end() && it->second.tensor.shape != expected[k].shape) {
      throw ops::OpError(fmt::format("{}: operand {} has shape {}, expected {}", op.name,
                                     names[k].name, ops::to_string({it->second.tensor.shape}),
                                     ops::to_string({expected[k].shape})));
    }
  }
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (!names[k].is_index) continue;
    const std::size_t limit = ops::operands(op, set.shape)[k].index_limit;
    for (std::size_t i = 0; i < set.inputs.indices[k].size(); ++i) {
      if (static_cast<std::size_t>(set.inputs.indices[k][i]) >= limit) {
        throw ops::OpError(fmt::format("{}[{}] = {} is not below the {} classes", names[k].name, i,
                                       set.inputs.indices[k][i], limit));
      }
    }
  }
  return set;
}

}  // namespace ampbench::audit
