// ampbench eval: one op on the user's own inputs, printing each output, its correctly rounded
// reference and the ulp error between them — the tool for "why is this one case wrong?".
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/audit/audit.hpp"
#include "harness/backends/cuda/plan.hpp"
#include "harness/cli/backend_options.hpp"
#include "harness/cli/commands.hpp"
#include "harness/inputs/tensor_file.hpp"
#include "harness/io/files.hpp"
#include "harness/numeric/options.hpp"
#include "harness/numeric/ulp.hpp"
#include "harness/runtime/cuda.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench eval";

std::string hex(double x) {
  return fmt::format("{:a}", x);
}

// A flat row-major vector as nested JSON lists of `shape`.
nlohmann::json nest(const std::vector<nlohmann::json>& flat, const std::vector<std::size_t>& shape,
                    std::size_t dimension = 0, std::size_t offset = 0) {
  if (shape.empty() || (shape.size() == 1 && shape[0] == 1 && dimension == 0 && flat.size() == 1)) {
    return flat.at(offset);
  }
  nlohmann::json list = nlohmann::json::array();
  std::size_t stride = 1;
  for (std::size_t d = dimension + 1; d < shape.size(); ++d) stride *= shape[d];
  for (std::size_t i = 0; i < shape[dimension]; ++i) {
    list.push_back(dimension + 1 == shape.size()
                       ? flat.at(offset + i)
                       : nest(flat, shape, dimension + 1, offset + i * stride));
  }
  return list;
}

}  // namespace

int run_eval(const EvalArgs& args, std::ostream& out, std::ostream& err) {
  const ops::OpInfo* op = ops::find_op(args.op);
  if (op == nullptr) {
    err << fmt::format("{}: --op: {} (known: {})\n", kCommand,
                       args.op.empty() ? std::string("required") : "unknown op '" + args.op + "'",
                       ops::op_names());
    return kExitUsage;
  }
  if (args.inputs.empty()) {
    err << kCommand << ": --inputs FILE is required\n";
    return kExitUsage;
  }
  policy::Policy policy;
  try {
    policy = policy::policy_by_name_or_file(args.policy);
  } catch (const policy::PolicyError& e) {
    err << fmt::format("{}: --policy: {}\n", kCommand, e.what());
    return kExitUsage;
  }
  std::optional<numeric::MmaModel> model;
  if (!args.mma.empty()) {
    try {
      model = audit::mma_for(args.mma, policy);
    } catch (const std::invalid_argument& e) {
      err << fmt::format("{}: --mma {}\n", kCommand, e.what());
      return kExitUsage;
    }
    if (const auto problem = ops::why_no_mma(*op)) {
      err << fmt::format("{}: --mma: {}\n", kCommand, *problem);
      return kExitUsage;
    }
  }
  const policy::OpPrecision precision = audit::precision_of(policy, *op);
  const std::optional<runtime::Request> request = read_backend(kCommand, args.backend, err);
  if (!request) return kExitUsage;
  const bool on_cpu = runtime::selection_of(*request).cpu;
  bool on_cuda = runtime::selection_of(*request).cuda;
  if (on_cpu) {
    if (const auto problem = audit::why_not_runnable(*op, policy, model.has_value())) {
      err << fmt::format("{}: --policy: {}\n", kCommand, *problem);
      return kExitUsage;
    }
  }
  std::optional<backends::cuda::Plan> cuda_plan;
  if (on_cuda) {
    if (model) {
      err << fmt::format(
          "{}: --mma models Tensor Cores on the CPU; on the GPU the hardware runs "
          "(leave out --mma, or use --backend cpu)\n",
          kCommand);
      return kExitUsage;
    }
    backends::cuda::Planning planned = backends::cuda::plan(*op, precision);
    if (!planned.plan) {
      err << fmt::format("{}: --backend {}: {}\n", kCommand, args.backend, planned.reason);
      return kExitUsage;
    }
    cuda_plan = std::move(planned.plan);
  }

  std::string text;
  try {
    text = io::read_file(args.inputs);
  } catch (const io::FileError& e) {
    err << fmt::format("{}: --inputs {}\n", kCommand, e.what());
    return kExitUsage;
  }

  // The operands by name, rounded to the format each is held in with the policy's input mode (a
  // stochastic mode gives each operand its own stream: audit::read_operands); shapes give the op's
  // shape.
  ops::Inputs in;
  ops::Shape shape;
  std::uint64_t rounded = 0;
  try {
    audit::OperandSet set =
        audit::read_operands(*op, precision, [&](const inputs::Conversion& conversion) {
          return inputs::parse_json_tensors(text, conversion, args.inputs);
        });
    in = std::move(set.inputs);
    shape = std::move(set.shape);
    rounded = set.rounded;
  } catch (const std::exception& e) {
    err << fmt::format("{}: --inputs {}: {}\n", kCommand, args.inputs, e.what());
    return kExitUsage;
  }

  if (on_cuda) {
    // What the device's kernel takes of the shape the operands gave (attention: L = S).
    const backends::cuda::Planning planned = backends::cuda::plan(*op, shape, precision);
    if (!planned.plan) {
      err << fmt::format("{}: --backend {}: {}\n", kCommand, args.backend, planned.reason);
      return kExitUsage;
    }
    for (std::size_t k = 0; k < in.values.size(); ++k) {
      if (op->op == ops::Op::gemm && k == 2 && !in.values[k].empty()) {
        err << fmt::format(
            "{}: --backend {}: the CUDA backend computes A B without C (leave out "
            "the operand c)\n",
            kCommand, args.backend);
        return kExitUsage;
      }
    }
  }
  // Last of the checks, as it makes the device's context.
  // Without one, cuda stops (exit 3) and all runs the CPU alone, saying why.
  const runtime::Opening opened = runtime::open_backends(*request);
  if (refused(kCommand, opened, err)) return kExitNoDevice;
  const runtime::CudaStatus& cuda = opened.cuda;
  const std::string& cuda_unavailable = opened.cpu_alone;
  on_cuda = opened.runs.cuda;

  // Each backend's output, CPU first.
  struct Output {
    std::string backend;
    std::vector<double> values;
    nlohmann::json ran;  // the GPU's call
  };
  std::vector<Output> runs;
  ops::Reference ref;
  try {
    if (on_cpu) {
      const backends::cpu::Arithmetic arithmetic = audit::arithmetic_of(precision);
      ops::CpuRun run =
          model ? ops::run_cpu_mma(*op, shape, *model, precision.output, precision.mode, in)
                : ops::run_cpu(*op, shape, arithmetic, backends::cpu::Summation::sequential, in);
      runs.push_back({"cpu", std::move(run.output), nullptr});
    }
    if (on_cuda) {
      Output gpu{"cuda", {}, nlohmann::json::object()};
      gpu.values = runtime::cuda_kernel(*op, shape, *cuda_plan, &gpu.ran["call"])(in);
      gpu.ran["device"] = cuda.device;
      runs.push_back(std::move(gpu));
    }
    ref = ops::reference(*op, shape, in, precision.output, precision.mode, 0, 0);
  } catch (const std::exception& e) {
    // A reference that cannot be rounded within its precision cap, or a failed CUDA call: say so
    // rather than abort.
    err << fmt::format("{}: {} under {}: could not compute: {}\n", kCommand, op->name, policy.name,
                       e.what());
    return kExitInternal;
  }

  std::vector<nlohmann::json> references;
  for (const double r : ref.rounded) references.emplace_back(hex(r));
  std::vector<std::vector<nlohmann::json>> outputs(runs.size()), errors(runs.size());
  for (std::size_t b = 0; b < runs.size(); ++b) {
    for (std::size_t i = 0; i < runs[b].values.size(); ++i) {
      const double v = runs[b].values[i];
      outputs[b].emplace_back(hex(v));
      const auto ulps = numeric::ulp_distance(precision.output, v, ref.rounded[i]);
      errors[b].push_back(ulps ? nlohmann::json(*ulps) : nlohmann::json(nullptr));
    }
  }
  const auto out_shape = ops::output_shape(*op, shape);
  if (args.json) {
    nlohmann::json j = {{"op", op->name},
                        {"policy", policy.name},
                        {"shape", ops::to_string(shape)},
                        {"formats",
                         {{"input", precision.input.name},
                          {"compute", precision.compute.name},
                          {"accumulate", precision.accumulate.name},
                          {"output", precision.output.name},
                          {"mode", numeric::rounding_name(precision.mode)}}},
                        {"inputs_rounded", rounded},
                        {"backend", runs.front().backend},
                        {"output", nest(outputs.front(), out_shape)},
                        {"reference", nest(references, out_shape)},
                        {"ulp_error", nest(errors.front(), out_shape)}};
    if (model) j["mma"] = model->name;
    if (!runs.front().ran.is_null()) j["ran"] = runs.front().ran;
    if (!cuda_unavailable.empty()) j["cuda_unavailable"] = cuda_unavailable;
    // With --backend all, the GPU's beside the CPU's.
    for (std::size_t b = 1; b < runs.size(); ++b) {
      j[runs[b].backend] = {{"output", nest(outputs[b], out_shape)},
                            {"ulp_error", nest(errors[b], out_shape)},
                            {"ran", runs[b].ran}};
    }
    out << j.dump(2) << '\n';
    return kExitOk;
  }
  out << fmt::format("{} {} under {}{}: input {}, compute {}, accumulate {}, output {} ({})\n",
                     op->name, ops::to_string(shape), policy.name,
                     model ? std::string(" on ") + model->name : std::string(),
                     precision.input.name, precision.compute.name, precision.accumulate.name,
                     precision.output.name, numeric::rounding_name(precision.mode));
  if (rounded > 0) {
    out << fmt::format("{} input value(s) were not values of {} and were rounded to it\n", rounded,
                       precision.input.name);
  }
  if (on_cuda) out << fmt::format("cuda: {}\n", cuda.gpu);
  if (!cuda_unavailable.empty()) {
    out << fmt::format("cuda: unavailable, {}; the CPU backend runs alone\n", cuda_unavailable);
  }
  const bool both = runs.size() > 1;
  out << fmt::format("{:<10}", "index");
  for (const auto& r : runs) out << fmt::format("{:<26}", both ? r.backend + " output" : "output");
  out << fmt::format("{:<26}", "reference");
  for (const auto& r : runs) out << (both ? r.backend + " ulp error  " : "ulp error");
  out << "\n";
  for (std::size_t i = 0; i < ref.rounded.size(); ++i) {
    out << fmt::format("{:<10}", i);
    for (std::size_t b = 0; b < runs.size(); ++b)
      out << fmt::format("{:<26}", outputs[b][i].get<std::string>());
    out << fmt::format("{:<26}", references[i].get<std::string>());
    for (std::size_t b = 0; b < runs.size(); ++b) {
      const std::string e = errors[b][i].is_null() ? std::string("NaN") : errors[b][i].dump();
      out << (both ? fmt::format("{:<16}", e) : e);
    }
    out << "\n";
  }
  return kExitOk;
}

}  // namespace ampbench::cli
