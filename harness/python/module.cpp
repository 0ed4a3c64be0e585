// ampbench._core: the libraries' formats, rounding, exact dot products and sums and the op
// references bound for Python over NumPy arrays (docs/python.md). Every number comes from the same
// functions the command line calls; this file only converts arguments and results. Bad arguments
// raise ValueError with the message the command line prints after its "ampbench COMMAND: --OPTION:"
// prefix.
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/audit/audit.hpp"
#include "harness/audit/budgets.hpp"
#include "harness/inputs/distributions.hpp"
#include "harness/inputs/tensor_file.hpp"
#include "harness/io/json_arrays.hpp"
#include "harness/metrics/metrics.hpp"
#include "harness/numeric/options.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/numeric/ulp.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/policy/policy.hpp"
#include "harness/results/compare.hpp"
#include "harness/results/record.hpp"
#include "harness/results/report.hpp"
#include "harness/results/suite.hpp"
#include "harness/train/scaler.hpp"
#include "reference/exact/dot.hpp"

namespace py = pybind11;

namespace ampbench::python {
namespace {

// Float64 input: no copy when the array already is C-contiguous binary64.
using Doubles = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::span<const double> view(const Doubles& a) {
  return {a.data(), static_cast<std::size_t>(a.size())};
}

std::vector<py::ssize_t> shape_of(const py::array& a) {
  return {a.shape(), a.shape() + a.ndim()};
}

numeric::Format format_named(const std::string& name) {
  const numeric::FormatSpec spec = numeric::parse_format(name);
  if (!spec.format) throw std::invalid_argument(spec.error);
  return *spec.format;
}

numeric::Rounding mode_named(const std::string& name) {
  const numeric::RoundingSpec spec = numeric::parse_rounding(name);
  if (!spec.mode) throw std::invalid_argument(spec.error);
  return *spec.mode;
}

const ops::OpInfo& op_named(const std::string& name) {
  const ops::OpInfo* op = ops::find_op(name);
  if (op == nullptr) {
    throw std::invalid_argument(fmt::format("unknown op '{}' (known: {})", name, ops::op_names()));
  }
  return *op;
}

// Options validated as the command line validates them: the first error is the exception.
void require_valid(const numeric::RoundingOptions& options) {
  const numeric::Validation validation = numeric::validate(options);
  if (!validation.ok()) throw std::invalid_argument(validation.errors.front());
}

py::dict describe(const numeric::Format& f) {
  py::dict d;
  d["name"] = f.name;
  d["bits"] = f.total_bits();
  d["precision"] = f.precision;
  d["emin"] = f.emin;
  d["emax"] = f.emax;
  d["subnormals"] = f.subnormals;
  d["overflow"] = f.overflow == numeric::Overflow::saturate ? "saturate" : "inf";
  d["specials"] = std::string(numeric::specials_name(f.specials));
  return d;
}

py::dict event_dict(const numeric::EventCounts& counts) {
  py::dict d;
  for (int e = 0; e < numeric::kRoundingEventCount; ++e) {
    const auto event = static_cast<numeric::RoundingEvent>(e);
    d[py::str(std::string(numeric::event_name(event)))] = counts[event];
  }
  return d;
}

// round(x, to, mode, seed, subnormals, overflow): element i (row-major) with stochastic draw i,
// as `ampbench round` draws for its i-th value.
py::dict round_values(const Doubles& x, const std::string& to, const std::string& mode,
                      std::uint64_t seed, std::optional<bool> subnormals,
                      const std::optional<std::string>& overflow) {
  numeric::RoundingOptions options;
  options.format = format_named(to);
  options.mode = mode_named(mode);
  options.seed = seed;
  if (subnormals) options.format.subnormals = *subnormals;
  if (overflow) {
    if (*overflow != "inf" && *overflow != "saturate") {
      throw std::invalid_argument(
          fmt::format("overflow must be 'inf' or 'saturate', not '{}'", *overflow));
    }
    options.format.overflow =
        *overflow == "saturate" ? numeric::Overflow::saturate : numeric::Overflow::infinity;
  }
  require_valid(options);
  const auto shape = shape_of(x);
  py::array_t<double> values(shape);
  py::array_t<std::uint64_t> bits(shape);
  py::array_t<std::uint8_t> events(shape);
  const std::span<const double> in = view(x);
  double* v = values.mutable_data();
  std::uint64_t* b = bits.mutable_data();
  std::uint8_t* e = events.mutable_data();
  {
    py::gil_scoped_release release;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const std::uint32_t draw =
          numeric::is_stochastic(options.mode) ? numeric::stochastic_draw(seed, i) : 0u;
      const numeric::Rounded r = numeric::round_to(options.format, options.mode, in[i], draw);
      v[i] = r.value;
      b[i] = r.bits;
      e[i] = static_cast<std::uint8_t>(r.event);
    }
  }
  py::dict d;
  d["values"] = values;
  d["bits"] = bits;
  d["events"] = events;
  d["format"] = describe(options.format);
  return d;
}

py::array_t<double> decode_bits(
    const py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>& bits,
    const std::string& format) {
  const numeric::Format f = format_named(format);
  const int width = f.total_bits();
  py::array_t<double> out(shape_of(bits));
  double* o = out.mutable_data();
  for (py::ssize_t i = 0; i < bits.size(); ++i) {
    const std::uint64_t pattern = bits.data()[i];
    if (width < 64 && pattern >> width != 0) {
      throw std::invalid_argument(fmt::format("bits[{}] = {:#x} is not a pattern of {} ({} bits)",
                                              i, pattern, f.name, width));
    }
    o[i] = numeric::decode(f, pattern);
  }
  return out;
}

py::object ulp_distance(double a, double b, const std::string& format) {
  const auto d = numeric::ulp_distance(format_named(format), a, b);
  return d ? py::object(py::int_(*d)) : py::object(py::none());
}

// The inputs as values of `f`, each rounded to nearest when it is not one (as `ampbench dot` reads
// its texts), and how many were.
std::vector<double> values_of(const numeric::Format& f, std::span<const double> x,
                              std::uint64_t& rounded) {
  std::vector<double> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    out[i] = numeric::round_to(f, numeric::Rounding::nearest_even, x[i]).value;
    if (!(out[i] == x[i] || (out[i] != out[i] && x[i] != x[i]))) ++rounded;
  }
  return out;
}

// The members of `ampbench dot --json`, numbers as floats.
py::dict dot(const Doubles& a, const Doubles& b, const std::string& format,
             const std::optional<std::string>& accumulate, const std::string& mode,
             std::uint64_t seed) {
  const numeric::Format f = format_named(format);
  numeric::RoundingOptions accumulation;
  accumulation.format = format_named(accumulate.value_or(format));
  accumulation.mode = mode_named(mode);
  accumulation.seed = seed;
  std::uint64_t rounded = 0;
  const std::vector<double> va = values_of(f, view(a), rounded);
  const std::vector<double> vb = values_of(f, view(b), rounded);
  if (va.size() != vb.size()) {
    throw std::invalid_argument(fmt::format(
        "a has {} elements and b has {}: they must have the same length", va.size(), vb.size()));
  }
  const reference::DotComparison c = [&] {
    py::gil_scoped_release release;
    return reference::compare_dot(f, accumulation, va, vb);
  }();
  py::dict d;
  d["format"] = f.name;
  d["accumulate"] = accumulation.format.name;
  d["mode"] = std::string(numeric::rounding_name(accumulation.mode));
  d["length"] = va.size();
  d["inputs_rounded"] = rounded;
  d["exact"] = c.exact.to_decimal();
  d["exact_hex"] = c.exact.to_hex();
  d["rounded"] = c.rounded.value;
  d["rounded_event"] = std::string(numeric::event_name(c.rounded.event));
  d["naive"] = c.naive.value;
  d["naive_reference"] = c.naive_reference;
  d["naive_ulp_error"] =
      c.naive_ulp_error ? py::object(py::int_(*c.naive_ulp_error)) : py::object(py::none());
  d["naive_step_events"] = event_dict(c.naive.step_events);
  return d;
}

// The exact sum of any binary64 values, and its correct rounding to `format` in `mode`
// (stochastic: draw number len(x) of seed, as dot draws).
py::dict exact_sum(const Doubles& x, const std::string& format, const std::string& mode,
                   std::uint64_t seed) {
  const numeric::Format f = format_named(format);
  const numeric::Rounding m = mode_named(mode);
  const std::span<const double> in = view(x);
  const reference::ExactValue exact = [&] {
    py::gil_scoped_release release;
    return reference::exact_sum(in);
  }();
  const numeric::Rounded r =
      exact.round(f, m, numeric::is_stochastic(m) ? numeric::stochastic_draw(seed, in.size()) : 0u);
  py::dict d;
  d["exact"] = exact.to_decimal();
  d["exact_hex"] = exact.to_hex();
  d["rounded"] = r.value;
  d["rounded_event"] = std::string(numeric::event_name(r.event));
  return d;
}

// A row-major flat vector as an array of `shape`.
py::array_t<double> shaped(const std::vector<double>& flat, const std::vector<std::size_t>& shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array_t<double> out(dims);
  std::copy(flat.begin(), flat.end(), out.mutable_data());
  return out;
}

// The caller's arrays as operands, each converted as `ampbench eval` converts its file's tensors.
audit::TensorReader reader(const std::map<std::string, Doubles>& arrays) {
  return [&arrays](const inputs::Conversion& conversion) {
    std::map<std::string, inputs::Loaded> tensors;
    for (const auto& [name, array] : arrays) {
      const auto dims = shape_of(array);
      tensors.emplace(name, inputs::convert({dims.begin(), dims.end()}, view(array), conversion,
                                            "python:" + name));
    }
    return tensors;
  };
}

// What `ampbench eval --json` gives for one op on the caller's arrays, on the CPU backend: the
// emulated output under the policy (or the Tensor Core model), its correctly rounded reference,
// the exact values rounded to binary64, each element's a-priori absolute bound for the policy's
// formats (None where the op has none, and on a Tensor Core model) and the ulp error of each
// element (a masked array, masked where either is NaN).
py::dict eval_op(const std::string& op_name, const std::string& policy_name,
                 const std::map<std::string, Doubles>& arrays,
                 const std::optional<std::string>& mma) {
  const ops::OpInfo* op = &op_named(op_name);
  const policy::Policy policy = policy::policy_by_name_or_file(policy_name);
  std::optional<numeric::MmaModel> model;
  if (mma) {
    model = audit::mma_for(*mma, policy);
    if (const auto problem = ops::why_no_mma(*op)) throw std::invalid_argument(*problem);
  }
  if (const auto problem = audit::why_not_runnable(*op, policy, model.has_value())) {
    throw std::invalid_argument(*problem);
  }
  const policy::OpPrecision precision = audit::precision_of(policy, *op);
  const audit::OperandSet set = audit::read_operands(*op, precision, reader(arrays));
  ops::CpuRun run;
  ops::Reference ref;
  std::vector<double> bounds;
  {
    py::gil_scoped_release release;
    run = model ? ops::run_cpu_mma(*op, set.shape, *model, precision.output, precision.mode,
                                   set.inputs)
                : ops::run_cpu(*op, set.shape, audit::arithmetic_of(precision),
                               backends::cpu::Summation::sequential, set.inputs);
    ref = ops::reference(*op, set.shape, set.inputs, precision.output, precision.mode, 0, 0);
    // Sequential summation's bound holds for any order of the additions (as audit_kernel's); a
    // Tensor Core model has none (docs/metrics.md).
    if (!model) {
      bounds = ops::error_bounds(*op, set.shape, audit::arithmetic_of(precision),
                                 backends::cpu::Summation::sequential, set.inputs, ref.positions);
    }
  }
  const auto out_shape = ops::output_shape(*op, set.shape);
  py::array_t<std::uint64_t> errors(std::vector<py::ssize_t>(out_shape.begin(), out_shape.end()));
  py::array_t<bool> mask(std::vector<py::ssize_t>(out_shape.begin(), out_shape.end()));
  for (std::size_t i = 0; i < run.output.size(); ++i) {
    const auto d = numeric::ulp_distance(precision.output, run.output[i], ref.rounded[i]);
    errors.mutable_data()[i] = d.value_or(0);
    mask.mutable_data()[i] = !d.has_value();
  }
  py::dict formats;
  formats["input"] = precision.input.name;
  formats["compute"] = precision.compute.name;
  formats["accumulate"] = precision.accumulate.name;
  formats["output"] = precision.output.name;
  formats["mode"] = std::string(numeric::rounding_name(precision.mode));
  py::dict d;
  d["op"] = std::string(op->name);
  d["policy"] = policy.name;
  d["shape"] = ops::to_string(set.shape);
  d["formats"] = formats;
  d["inputs_rounded"] = set.rounded;
  d["backend"] = "cpu";
  if (model) d["mma"] = model->name;
  d["output"] = shaped(run.output, out_shape);
  d["reference"] = shaped(ref.rounded, out_shape);
  d["exact"] = shaped(ref.nearest, out_shape);
  d["bound"] = bounds.empty() ? py::object(py::none()) : py::object(shaped(bounds, out_shape));
  d["ulp_error"] = py::module_::import("numpy.ma").attr("masked_array")(errors, mask);
  return d;
}

// A JSON value as Python objects (dicts, lists, numbers, strings, None): the records are the
// command line's JSON, read back by Python's own parser.
py::object from_json(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

std::vector<audit::Budget> budgets_from(const std::optional<std::string>& path) {
  return path ? audit::load_budgets(*path) : std::vector<audit::Budget>{};
}

// An audit case as `ampbench audit --op OP --policy P ...` makes it.
audit::Case audit_case(const std::string& op_name, const std::string& policy_name,
                       const std::optional<std::string>& shape, const std::string& dist,
                       std::uint64_t seed, std::size_t samples,
                       const std::optional<std::string>& mma) {
  audit::Case c;
  c.op = &op_named(op_name);
  c.shape = ops::parse_shape(*c.op, shape.value_or(std::string(c.op->default_shape)));
  c.policy = policy::policy_by_name_or_file(policy_name);
  inputs::parse_spec(dist);  // a bad spec is bad input before any work
  c.distribution = dist;
  c.seed = seed;
  c.samples = samples;
  if (mma) {
    c.mma = audit::mma_for(*mma, c.policy);
    if (const auto problem = ops::why_no_mma(*c.op)) throw std::invalid_argument(*problem);
  }
  return c;
}

// The record `ampbench audit --json` writes for the case (an element of its "cases").
py::object audit_op(const std::string& op, const std::string& policy,
                    const std::optional<std::string>& shape, const std::string& dist,
                    std::uint64_t seed, std::size_t samples, const std::optional<std::string>& mma,
                    const std::optional<std::string>& budgets) {
  const audit::Case c = audit_case(op, policy, shape, dist, seed, samples, mma);
  if (const auto problem = audit::why_not_runnable(*c.op, c.policy, c.mma.has_value())) {
    throw std::invalid_argument(*problem);
  }
  const std::vector<audit::Budget> limits = budgets_from(budgets);
  const audit::CaseResult result = [&] {
    py::gil_scoped_release release;
    return audit::run_case(c, limits);
  }();
  return from_json(audit::to_json(result));
}

// A Python callable judged as an implementation of a catalog op (docs/embedding.md's
// run_kernel_case): called with the case's operands, a dict of name to array (float64 values of
// the policy's input format; class indices as int64), it returns the output, any array of the op's
// output size (float64 values of the policy's output format).
py::object audit_kernel(const std::string& op, const std::string& policy,
                        const py::function& kernel, const std::optional<std::string>& shape,
                        const std::string& dist, std::uint64_t seed, std::size_t samples,
                        const std::string& name, const std::optional<std::string>& budgets) {
  const audit::Case c = audit_case(op, policy, shape, dist, seed, samples, std::nullopt);
  const std::vector<ops::Operand> operands = ops::operands(*c.op, c.shape);
  const audit::Kernel call = [&](const ops::Inputs& in) {
    py::dict arrays;
    for (std::size_t k = 0; k < operands.size(); ++k) {
      const std::vector<py::ssize_t> dims(operands[k].shape.begin(), operands[k].shape.end());
      if (operands[k].is_index) {
        py::array_t<std::int64_t> a(dims);
        std::copy(in.indices[k].begin(), in.indices[k].end(), a.mutable_data());
        arrays[py::str(operands[k].name)] = a;
      } else if (!in.values[k].empty() || !operands[k].optional) {
        arrays[py::str(operands[k].name)] = shaped(in.values[k], operands[k].shape);
      }
    }
    const Doubles out = kernel(arrays);
    const std::span<const double> values = view(out);
    return std::vector<double>(values.begin(), values.end());
  };
  return from_json(audit::to_json(audit::run_kernel_case(c, call, name, budgets_from(budgets))));
}

// The error metrics of a computed tensor against its correctly rounded reference and the exact
// values (metrics::summarize), as the records write them; `bounds`, when given, the a-priori
// absolute bound of each element. With `op`, also the `breaches` of the budgets file `budgets`
// that apply to (op, policy) on no particular backend and of the two budgets that always apply (a
// bound ratio above 1, a NaN/Inf mismatch or value outside the format), as the audit checks a case.
py::object error_metrics(const Doubles& computed, const Doubles& rounded, const Doubles& exact,
                         const std::string& format, const std::optional<Doubles>& bounds,
                         const std::optional<std::string>& op, const std::string& policy,
                         const std::optional<std::string>& budgets) {
  metrics::ElementBounds element_bounds;
  if (bounds) element_bounds.rigorous = view(*bounds);
  const metrics::ErrorSummary summary = metrics::summarize(
      format_named(format), view(computed), view(rounded), view(exact), element_bounds);
  py::dict out = from_json(metrics::to_json(summary));
  if (op) {
    op_named(*op);  // an unknown op is bad input, not a budget that never applies
    py::list messages;
    for (const audit::Breach& b : audit::check(budgets_from(budgets), *op, policy, "", summary)) {
      messages.append(b.message);
    }
    out["breaches"] = messages;
  }
  return out;
}

// GradScaler's state machine over float32 gradients, unscaled in place (no copy).
class Scaler {
 public:
  explicit Scaler(const train::LossScalerOptions& options) : scaler_(checked(options)) {}
  // Each gradient must be a writable C-contiguous float32 array: it is unscaled in place.
  bool step(const std::vector<py::array>& grads,
            const std::optional<py::function>& optimizer_step) {
    std::vector<std::span<float>> spans;
    for (std::size_t i = 0; i < grads.size(); ++i) {
      py::array g = grads[i];
      if (!g.dtype().is(py::dtype::of<float>()) || !(g.flags() & py::array::c_style) ||
          !g.writeable()) {
        throw py::type_error(fmt::format(
            "grads[{}] must be a writable C-contiguous float32 array (it is unscaled in place)",
            i));
      }
      spans.emplace_back(static_cast<float*>(g.mutable_data()), static_cast<std::size_t>(g.size()));
    }
    return scaler_.step(spans, [&] {
      if (optimizer_step) (*optimizer_step)();
    });
  }
  void update() { scaler_.update(); }
  const train::LossScaler& state() const { return scaler_; }

 private:
  static const train::LossScalerOptions& checked(const train::LossScalerOptions& options) {
    if (const auto error = train::validate(options)) {
      throw std::invalid_argument(fmt::format("{}: {}", error->option, error->message));
    }
    return options;
  }
  train::LossScaler scaler_;
};

// Python objects as JSON, through Python's own writer.
nlohmann::json to_json(const py::handle& object) {
  return nlohmann::json::parse(
      py::module_::import("json").attr("dumps")(object).cast<std::string>());
}

// Audit records (as audit() and audit_kernel() return them) as an ampbench.result/1 record of a
// complete run, each keyed as a suite keys its audit cases ("/backend=NAME" for a kernel), with
// this host's environment; checked as `ampbench compare` checks a record.
py::object result_of(const py::list& cases, const std::string& suite) {
  nlohmann::json records = nlohmann::json::array();
  results::Expected expected;
  for (const py::handle& c : cases) {
    results::Record r;
    r.detail = to_json(c);
    const nlohmann::json& d = r.detail;
    const auto outputs = d.at("outputs").get<std::size_t>();
    const auto sample = d.at("reference_sample").get<std::size_t>();
    r.key = results::audit_key(results::AuditKey{
        d.at("op").get_ref<const std::string&>(), d.at("shape").get_ref<const std::string&>(),
        d.at("policy").get_ref<const std::string&>(), d.at("dist").get_ref<const std::string&>(),
        d.at("seed").get<std::uint64_t>(), d.value("mma", std::string()),
        sample < outputs ? sample : 0});
    const auto& backend = d.at("backend").get_ref<const std::string&>();
    if (backend != "cpu") r.key += "/backend=" + backend;
    r.kind = "audit";
    r.pass = d.at("status") == "PASS";
    r.breaches = d.at("breaches").get<std::vector<std::string>>();
    r.metrics = results::audit_metrics(d);
    expected.keys.push_back(r.key);
    records.push_back(results::to_json(r));
  }
  results::Environment environment = results::host_environment();
  environment.ampbench_version = AMPBENCH_VERSION;
  environment.build_type = AMPBENCH_BUILD_TYPE;
  environment.started = environment.finished = results::utc_now();
  const nlohmann::json document =
      results::result_document(suite, results::Shard{}, environment, records, expected, true);
  results::parse_result(document, suite);
  return from_json(document);
}

// A result record read and checked as `ampbench report` and `compare` read it.
py::object read_result(const std::string& path) {
  return from_json(results::load_result_document(path).document);
}

// The operands at a shape given as text (`ampbench audit --shape`'s: a convolution's stride,
// padding, dilation and groups, which its operands cannot tell), as binary64 values: each array
// must have the shape's operand shape. For ops without class-index operands.
audit::OperandSet operands_at(const ops::OpInfo& op, const std::string& text,
                              const std::map<std::string, Doubles>& arrays) {
  audit::OperandSet set;
  set.shape = ops::parse_shape(op, text);
  const std::vector<ops::Operand> expected = ops::operands(op, set.shape);
  const auto tensors = reader(arrays)(inputs::Conversion(numeric::formats::fp64));
  for (const auto& [name, loaded] : tensors) {
    if (std::none_of(expected.begin(), expected.end(),
                     [&](const ops::Operand& o) { return o.name == name; })) {
      throw ops::OpError(fmt::format("unknown operand '{}' of {}", name, op.name));
    }
  }
  for (const ops::Operand& o : expected) {
    if (o.is_index) throw ops::OpError(fmt::format("{}: no shape= for class indices", op.name));
    const auto it = tensors.find(o.name);
    if (it == tensors.end() && !o.optional) {
      throw ops::OpError(fmt::format("missing operand '{}'", o.name));
    }
    if (it != tensors.end() && it->second.tensor.shape != o.shape) {
      throw ops::OpError(fmt::format("{}: operand {} has shape {}, expected {} (shape '{}')",
                                     op.name, o.name, ops::to_string({it->second.tensor.shape}),
                                     ops::to_string({o.shape}), text));
    }
    set.inputs.values.push_back(it == tensors.end() ? std::vector<double>{}
                                                    : it->second.tensor.data);
    set.inputs.indices.emplace_back();
  }
  return set;
}

// The op's reference on the caller's operands (any binary64 values), correctly rounded to `format`
// in `mode` (ops::reference): at every output position (shaped as the output), or at `samples`
// positions chosen from `seed` (flat, with their row-major `positions`). `nearest` is the exact
// value rounded to the nearest binary64. The shape comes from the operands, or from `shape`.
py::dict reference_of(const std::string& op_name, const std::map<std::string, Doubles>& arrays,
                      const std::string& format, const std::string& mode, std::size_t samples,
                      std::uint64_t seed, const std::optional<std::string>& shape) {
  const ops::OpInfo& op = op_named(op_name);
  policy::OpPrecision binary64;
  binary64.input = binary64.compute = binary64.accumulate = binary64.output =
      numeric::formats::fp64;
  const audit::OperandSet set =
      shape ? operands_at(op, *shape, arrays) : audit::read_operands(op, binary64, reader(arrays));
  const numeric::Format f = format_named(format);
  const numeric::Rounding m = mode_named(mode);
  const ops::Reference ref = [&] {
    py::gil_scoped_release release;
    return ops::reference(op, set.shape, set.inputs, f, m, samples, seed);
  }();
  const auto out_shape = ops::output_shape(op, set.shape);
  const bool all = ref.positions.size() == ops::element_count(out_shape);
  const std::vector<std::size_t> flat{ref.positions.size()};
  py::dict d;
  d["shape"] = ops::to_string(set.shape);
  d["positions"] = py::array_t<std::size_t>(static_cast<py::ssize_t>(ref.positions.size()),
                                            ref.positions.data());
  d["rounded"] = shaped(ref.rounded, all ? out_shape : flat);
  d["nearest"] = shaped(ref.nearest, all ? out_shape : flat);
  return d;
}

py::list op_catalog() {
  py::list list;
  for (const ops::OpInfo& op : ops::catalog()) {
    py::dict d;
    d["name"] = std::string(op.name);
    d["class"] = std::string(op.op_class);
    d["shape_syntax"] = std::string(op.shape_syntax);
    d["default_shape"] = std::string(op.default_shape);
    d["summary"] = std::string(op.summary);
    d["bound"] = std::string(op.bound);
    list.append(d);
  }
  return list;
}

}  // namespace
}  // namespace ampbench::python

PYBIND11_MODULE(_core, m) {
  using namespace ampbench;
  m.doc() = "ampbench's formats, rounding, exact dot products and op references (docs/python.md)";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const io::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const policy::PolicyError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const results::ResultError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const nlohmann::json::exception& e) {  // a record without a member result() reads
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  py::list events;
  for (int e = 0; e < numeric::kRoundingEventCount; ++e) {
    events.append(std::string(numeric::event_name(static_cast<numeric::RoundingEvent>(e))));
  }
  m.attr("EVENTS") = py::tuple(events);
  m.def("formats", [] {
    py::list list;
    for (const numeric::Format& f : numeric::formats::builtin) list.append(python::describe(f));
    return list;
  });
  m.def("format_info",
        [](const std::string& spec) { return python::describe(python::format_named(spec)); });
  m.def("round", &python::round_values, py::arg("x"), py::arg("to"), py::arg("mode") = "rne",
        py::arg("seed") = 0, py::arg("subnormals") = py::none(), py::arg("overflow") = py::none());
  m.def("decode", &python::decode_bits, py::arg("bits"), py::arg("format"));
  m.def("ulp_distance", &python::ulp_distance, py::arg("a"), py::arg("b"), py::arg("format"));
  m.def("dot", &python::dot, py::arg("a"), py::arg("b"), py::arg("format"),
        py::arg("accumulate") = py::none(), py::arg("mode") = "rne", py::arg("seed") = 0);
  m.def("exact_sum", &python::exact_sum, py::arg("x"), py::arg("format") = "fp64",
        py::arg("mode") = "rne", py::arg("seed") = 0);
  m.def("eval", &python::eval_op, py::arg("op"), py::arg("policy"), py::arg("inputs"),
        py::arg("mma") = py::none());
  m.def("ops", &python::op_catalog);
  m.def("policies", [] {
    nlohmann::json list = nlohmann::json::array();
    for (const policy::Policy& p : policy::builtin_policies()) list.push_back(policy::to_json(p));
    return python::from_json(list);
  });
  m.def(
      "policy",
      [](const std::string& name) {
        return python::from_json(policy::to_json(policy::policy_by_name_or_file(name)));
      },
      py::arg("name"));
  m.def("result", &python::result_of, py::arg("cases"), py::arg("suite") = "python");
  m.def("read_result", &python::read_result, py::arg("path"));
  m.def("reference", &python::reference_of, py::arg("op"), py::arg("inputs"),
        py::arg("format") = "fp32", py::arg("mode") = "rne", py::arg("samples") = 0,
        py::arg("seed") = 0, py::arg("shape") = py::none());
  m.def("audit", &python::audit_op, py::arg("op"), py::arg("policy") = "fp32",
        py::arg("shape") = py::none(), py::arg("dist") = "normal", py::arg("seed") = 1,
        py::arg("samples") = 0, py::arg("mma") = py::none(), py::arg("budgets") = py::none());
  m.def("audit_kernel", &python::audit_kernel, py::arg("op"), py::arg("policy"), py::arg("kernel"),
        py::arg("shape") = py::none(), py::arg("dist") = "normal", py::arg("seed") = 1,
        py::arg("samples") = 0, py::arg("name") = "python", py::arg("budgets") = py::none());
  m.def("metrics", &python::error_metrics, py::arg("computed"), py::arg("rounded"),
        py::arg("exact"), py::arg("format"), py::arg("bounds") = py::none(),
        py::arg("op") = py::none(), py::arg("policy") = "*", py::arg("budgets") = py::none());
  py::class_<python::Scaler>(m, "LossScaler")
      .def(
          py::init([](double init_scale, double growth_factor, double backoff_factor,
                      int growth_interval, std::optional<double> min_scale) {
            return python::Scaler(train::LossScalerOptions{.init_scale = init_scale,
                                                           .growth_factor = growth_factor,
                                                           .backoff_factor = backoff_factor,
                                                           .growth_interval = growth_interval,
                                                           .min_scale = min_scale,
                                                           .collapse = train::CollapseDetection{}});
          }),
          py::arg("init_scale") = 65536.0, py::arg("growth_factor") = 2.0,
          py::arg("backoff_factor") = 0.5, py::arg("growth_interval") = 2000,
          py::arg("min_scale") = py::none())
      .def("scale_loss",
           [](const python::Scaler& s, float loss) { return s.state().scale_loss(loss); })
      .def("step", &python::Scaler::step, py::arg("grads"), py::arg("optimizer_step") = py::none())
      .def("update", &python::Scaler::update)
      .def_property_readonly("scale", [](const python::Scaler& s) { return s.state().scale(); })
      .def_property_readonly("growth_tracker",
                             [](const python::Scaler& s) { return s.state().growth_tracker(); })
      .def_property_readonly("found_inf",
                             [](const python::Scaler& s) { return s.state().found_inf(); })
      .def_property_readonly("steps", [](const python::Scaler& s) { return s.state().steps(); })
      .def_property_readonly("skipped_steps",
                             [](const python::Scaler& s) { return s.state().skipped_steps(); })
      .def_property_readonly("warnings", [](const python::Scaler& s) {
        std::vector<std::string> out;
        for (const auto& w : s.state().collapse_warnings()) {
          out.push_back(train::describe(w, *s.state().collapse_detection()));
        }
        return out;
      });
}
