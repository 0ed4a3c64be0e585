// ampbench audit: how wrong is op X under precision policy P, on inputs like these? Every case is
// checked against its correctly rounded reference and the budgets. Bad input is reported before
// any work starts; the --json file is rewritten (atomically) after every case, so the records of
// finished cases stay valid whatever happens to later ones.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/audit/audit.hpp"
#include "harness/backends/cuda/conv_plan.hpp"
#include "harness/backends/cuda/plan.hpp"
#include "harness/cli/backend_options.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/file_plan.hpp"
#include "harness/cli/policy_options.hpp"
#include "harness/cli/text.hpp"
#include "harness/runtime/cuda.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench audit";
constexpr const char* kDefaultBudgets = "suites/budgets.toml";

std::string number(const std::optional<double>& v, const char* format = "{:.3g}") {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string("-");
}

// The widths of the table's text columns: the longest op name, policy name (a policy file's name
// may be long), shape (convolutions with their options) and distribution, and two blanks; no
// backend column unless cuda was asked for.
struct Widths {
  std::size_t op = 24;
  std::size_t policy = 10;
  std::size_t backend = 0;
  std::size_t shape = 16;
  std::size_t dist = 9;
};

void write_row(std::ostream& out, const Widths& w, const audit::CaseResult& r) {
  const auto& s = r.summary;
  const auto& e = s.output_events;
  out << fmt::format(
      "{:<{}}{:<{}}{:<{}}{:<{}}{:<{}}{:>9}{:>10}{:>11}{:>9}{:>8}{:>8}{:>8}{:>6}  {}\n", r.op, w.op,
      r.policy, w.policy, w.backend == 0 ? "" : r.backend, w.backend, r.shape, w.shape,
      r.distribution, w.dist, s.max_ulp ? fmt::format("{}", *s.max_ulp) : "-", number(s.mean_ulp),
      number(s.normwise_rel_error), number(s.bound_ratio),
      number(s.fraction_correctly_rounded
                 ? std::optional<double>(100 * *s.fraction_correctly_rounded)
                 : std::nullopt,
             "{:.1f}"),
      e[numeric::RoundingEvent::underflow] + e[numeric::RoundingEvent::flush_to_zero],
      e[numeric::RoundingEvent::overflow] + e[numeric::RoundingEvent::saturation],
      e[numeric::RoundingEvent::nan], r.pass() ? "PASS" : "FAIL");
}

// A case the CUDA backend cannot run, in the table and in the records: never left out silently.
void write_not_run(std::ostream& out, const Widths& w, const audit::Case& c,
                   const std::string& reason) {
  out << fmt::format("{:<{}}{:<{}}{:<{}}{:<{}}NOT RUN  {}\n", c.op->name, w.op, c.policy.name,
                     w.policy, "cuda", w.backend, ops::to_string(c.shape), w.shape, reason);
}

nlohmann::json not_run_record(const audit::Case& c, const std::string& reason) {
  return {{"op", c.op->name},       {"policy", c.policy.name},
          {"backend", "cuda"},      {"shape", ops::to_string(c.shape)},
          {"dist", c.distribution}, {"seed", c.seed},
          {"status", "NOT_RUN"},    {"reason", reason}};
}

// Writes the records so far, so that the file is always a complete JSON document: `expected`
// records in all, and complete only when written after the last case.
bool write_records(const std::string& path, const nlohmann::json& records, std::size_t expected,
                   bool complete, const std::string& cuda_unavailable, std::ostream& err) {
  nlohmann::json document{{"schema", "ampbench.audit/1"},
                          {"expected", expected},
                          {"complete", complete},
                          {"cases", records}};
  if (!cuda_unavailable.empty()) document["cuda_unavailable"] = cuda_unavailable;
  if (auto problem = write_json_file(path, document)) {
    err << fmt::format("{}: --json {}: {}\n", kCommand, path, *problem);
    return false;
  }
  return true;
}

// An option that picks one of the CUDA backend's choices (--gemm-compute, --conv-math): nothing
// when not given; else it must go with --backend cuda or all and name a known choice. False, with
// the message written, when it does not.
template <typename Choice>
bool read_cuda_choice(const AuditArgs& args, const char* option, const std::string& value,
                      const char* what, std::optional<Choice> (*from_name)(std::string_view),
                      const std::string& known, std::optional<Choice>& choice, std::ostream& err) {
  if (value.empty()) return true;
  if (args.backend == "cpu") {
    err << fmt::format("{}: {} goes with --backend cuda or all\n", kCommand, option);
    return false;
  }
  choice = from_name(value);
  if (!choice) {
    err << fmt::format("{}: {}: unknown {} '{}' (known: {})\n", kCommand, option, what, value,
                       known);
    return false;
  }
  return true;
}

}  // namespace

int run_audit(const AuditArgs& args, std::ostream& out, std::ostream& err) {
  if (!args.recipes.empty()) return run_recipe_audit(args, out, err);
  for (const char* option : {"--arch", "--promote-interval", "--gemm"}) {
    if (std::find(args.given.begin(), args.given.end(), option) != args.given.end()) {
      err << fmt::format("{}: {} goes with --recipe\n", kCommand, option);
      return kExitUsage;
    }
  }
  // ---- everything is checked before any work starts -----------------------------------------
  if (args.op.empty() == !args.all) {
    err << kCommand << ": give exactly one of --op OP and --all\n";
    return kExitUsage;
  }
  const std::optional<runtime::Request> request = read_backend(kCommand, args.backend, err);
  if (!request) return kExitUsage;
  // The device first: without one, --backend cuda has nothing to check the rest for, and all
  // runs the CPU alone.
  const runtime::Opening opened = runtime::open_backends(*request);
  if (refused(kCommand, opened, err)) return kExitNoDevice;
  const runtime::CudaStatus& cuda = opened.cuda;
  const bool on_cpu = opened.runs.cpu;
  const bool on_cuda = opened.runs.cuda;
  std::optional<backends::cuda::GemmCompute> gemm_compute;
  std::optional<kernels::ConvolutionMath> conv_math;
  if (!read_cuda_choice(args, "--gemm-compute", args.gemm_compute, "compute type",
                        backends::cuda::compute_from_name, backends::cuda::compute_names(),
                        gemm_compute, err) ||
      !read_cuda_choice(args, "--conv-math", args.conv_math, "math type",
                        backends::cuda::conv_math_from_name, backends::cuda::conv_math_names(),
                        conv_math, err)) {
    return kExitUsage;
  }
  if (!args.mma.empty() && !on_cpu) {
    err << kCommand << ": --mma models the CPU backend's Tensor Cores: not with --backend cuda\n";
    return kExitUsage;
  }
  if (args.all && !args.shape.empty()) {
    err << kCommand << ": --shape goes with --op (--all uses each op's default shape)\n";
    return kExitUsage;
  }
  backends::cpu::Summation summation = backends::cpu::Summation::sequential;
  if (args.summation == "pairwise") {
    summation = backends::cpu::Summation::pairwise;
  } else if (args.summation != "sequential") {
    err << fmt::format("{}: --summation: unknown order '{}' (sequential, pairwise)\n", kCommand,
                       args.summation);
    return kExitUsage;
  }

  std::vector<const ops::OpInfo*> op_list;
  if (args.all) {
    for (const auto& op : ops::catalog()) op_list.push_back(&op);
  } else {
    for (const std::string& name : split_list(args.op)) {
      const ops::OpInfo* op = ops::find_op(name);
      if (op == nullptr) {
        err << fmt::format("{}: --op: unknown op '{}' (known: {})\n", kCommand, name,
                           ops::op_names());
        return kExitUsage;
      }
      op_list.push_back(op);
    }
  }
  if (op_list.size() > 1 && !args.all && !args.shape.empty()) {
    err << kCommand << ": --shape goes with a single --op (several use each op's default shape)\n";
    return kExitUsage;
  }
  std::vector<ops::Shape> shapes;
  try {
    for (const auto* op : op_list) {
      shapes.push_back(ops::parse_shape(*op, args.shape.empty() ? op->default_shape : args.shape));
    }
  } catch (const ops::OpError& e) {
    err << fmt::format("{}: --shape: {}\n", kCommand, e.what());
    return kExitUsage;
  }

  const std::vector<std::string> policy_names =
      args.all && args.policies.empty()
          ? std::vector<std::string>{"fp32", "tf32", "fp16", "bf16", "amp-fp16", "amp-bf16"}
          : split_list(args.policies.empty() ? "fp32" : args.policies);
  const auto read = read_policies(kCommand, policy_names, err);
  if (!read) return kExitUsage;
  const std::vector<policy::Policy>& policies = *read;
  // The Tensor Core model of each policy (audit::mma_for).
  std::vector<std::optional<numeric::MmaModel>> models(policies.size());
  if (!args.mma.empty()) {
    for (std::size_t i = 0; i < policies.size(); ++i) {
      try {
        models[i] = audit::mma_for(args.mma, policies[i]);
      } catch (const std::invalid_argument& e) {
        err << fmt::format("{}: --mma {}\n", kCommand, e.what());
        return kExitUsage;
      }
    }
    for (const auto* op : op_list) {
      if (const auto problem = ops::why_no_mma(*op)) {
        err << fmt::format("{}: --mma {}: {}\n", kCommand, args.mma, *problem);
        return kExitUsage;
      }
    }
  }
  for (const auto* op : op_list) {
    for (std::size_t j = 0; j < policies.size() && on_cpu; ++j) {
      if (const auto problem = audit::why_not_runnable(*op, policies[j], models[j].has_value())) {
        err << fmt::format("{}: --policy: {}\n", kCommand, *problem);
        return kExitUsage;
      }
    }
  }
  // What the CUDA backend runs of each case (op i under policy j at [i * policies + j]), or why
  // it cannot.
  std::vector<backends::cuda::Planning> plans;
  if (on_cuda) {
    for (std::size_t i = 0; i < op_list.size(); ++i) {
      for (const auto& p : policies) {
        plans.push_back(backends::cuda::plan(
            *op_list[i], shapes[i], audit::precision_of(p, *op_list[i]), gemm_compute, conv_math));
      }
    }
    if (!on_cpu && std::none_of(plans.begin(), plans.end(),
                                [](const auto& planned) { return planned.plan.has_value(); })) {
      err << fmt::format("{}: --backend cuda: no case can run on the CUDA backend:\n", kCommand);
      for (const auto& planned : plans) err << "  " << planned.reason << '\n';
      return kExitUsage;
    }
  }
  FilePlan files;
  for (const auto& file : policy_files(policy_names)) files.input("--policy", file);
  if (const auto problem = plan_distribution(files, args.dist)) {
    err << fmt::format("{}: {}\n", kCommand, *problem);
    return kExitUsage;
  }

  std::vector<audit::Budget> budgets;
  std::string budgets_path = args.budgets;
  if (budgets_path.empty() && std::filesystem::exists(kDefaultBudgets))
    budgets_path = kDefaultBudgets;
  if (!budgets_path.empty() && budgets_path != "none") {
    files.input("--budgets", budgets_path);
    try {
      budgets = audit::load_budgets(budgets_path);
      std::vector<std::string> names;
      for (const auto& p : policies) names.push_back(p.name);
      audit::check_policies(budgets, names);
    } catch (const audit::BudgetError& e) {
      err << fmt::format("{}: --budgets: {}\n", kCommand, e.what());
      return kExitUsage;
    }
  }
  if (!args.json.empty()) files.output("--json", args.json);
  if (const auto problem = files.problem()) {
    err << fmt::format("{}: {}\n", kCommand, *problem);
    return kExitUsage;
  }

  // ---- the cases ------------------------------------------------------------------------------
  out << fmt::format("budgets: {}\n", budgets_path.empty() || budgets_path == "none"
                                          ? std::string("built-in only (bound ratio <= 1, no "
                                                        "NaN/Inf mismatches)")
                                          : budgets_path);
  const std::string& cuda_unavailable = opened.cpu_alone;
  if (!cuda_unavailable.empty()) {
    out << fmt::format("cuda: unavailable, {}; the CPU backend runs alone\n", cuda_unavailable);
  }
  if (on_cuda) {
    out << fmt::format(
        "cuda: {}, compute capability {}; driver {}, CUDA runtime {}, cuBLAS {}, "
        "cuDNN {}\n",
        cuda.device["name"].get<std::string>(),
        cuda.device["compute_capability"].get<std::string>(),
        cuda.device["driver"].get<std::string>(), cuda.device["cuda_runtime"].get<std::string>(),
        cuda.device["cublas"].get<std::string>(), cuda.device["cudnn"].get<std::string>());
    if (cuda.device["nvidia_tf32_override"] == "0") {
      out << "cuda: NVIDIA_TF32_OVERRIDE=0: cuBLAS and cuDNN run no TF32, whatever the policy\n";
    }
    for (const auto& planned : plans) {
      if (!planned.plan) out << "not on cuda: " << planned.reason << '\n';
    }
  }
  if (!args.mma.empty()) {
    out << fmt::format(
        "mma: {} (gemm, bmm, dot, their gradients and the convolutions run on the Tensor Core "
        "model; no a-priori bound)\n",
        args.mma);
  }
  Widths widths;
  if (args.backend != "cpu") widths.backend = 9;
  for (std::size_t i = 0; i < op_list.size(); ++i) {
    widths.op = std::max(widths.op, op_list[i]->name.size() + 2);
    widths.shape = std::max(widths.shape, ops::to_string(shapes[i]).size() + 2);
  }
  for (const auto& p : policies) widths.policy = std::max(widths.policy, p.name.size() + 2);
  widths.dist = std::max(widths.dist, args.dist.size() + 2);
  out << fmt::format(
      "{:<{}}{:<{}}{:<{}}{:<{}}{:<{}}{:>9}{:>10}{:>11}{:>9}{:>8}{:>8}{:>8}{:>6}  {}\n", "op",
      widths.op, "policy", widths.policy, widths.backend == 0 ? "" : "backend", widths.backend,
      "shape", widths.shape, "dist", widths.dist, "max_ulp", "mean_ulp", "normwise", "bound", "CR%",
      "uflow", "oflow", "nan", "status");
  nlohmann::json records = nlohmann::json::array();
  // A record per case and backend: the CPU's, and the GPU's (run, or NOT_RUN with the reason).
  const std::size_t expected =
      op_list.size() * policies.size() * ((on_cpu ? 1u : 0u) + (on_cuda ? 1u : 0u));
  // Written before the first case, so that an audit that stops says so.
  if (!args.json.empty() &&
      !write_records(args.json, records, expected, false, cuda_unavailable, err)) {
    return kExitUsage;
  }
  std::vector<std::string> failures;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < op_list.size(); ++i) {
    for (std::size_t j = 0; j < policies.size(); ++j) {
      const auto& p = policies[j];
      audit::Case c{op_list[i], shapes[i],    p,         args.dist,
                    args.seed,  args.samples, summation, models[j]};
      const backends::cuda::Planning* planned = on_cuda ? &plans[i * policies.size() + j] : nullptr;
      // Each backend's result of the case (and what ran on the GPU), one after the other: side
      // by side in the table.
      std::vector<std::pair<audit::CaseResult, nlohmann::json>> results;
      try {
        if (on_cpu) results.emplace_back(audit::run_case(c, budgets), nlohmann::json());
        if (planned != nullptr && planned->plan) {
          nlohmann::json detail;
          const audit::Kernel kernel =
              runtime::cuda_kernel(*c.op, c.shape, *planned->plan, &detail);
          audit::CaseResult result = audit::run_kernel_case(c, kernel, "cuda", budgets);
          results.emplace_back(std::move(result), std::move(detail));
        }
      } catch (const io::InputError& e) {  // a file: distribution's values
        out.flush();
        err << fmt::format("{}: {} under {}: {}\n", kCommand, op_list[i]->name, p.name, e.what());
        return kExitUsage;
      } catch (const std::exception& e) {  // not the input's fault: a reference, the device
        out.flush();
        err << fmt::format("{}: {} under {}: could not compute: {}\n", kCommand, op_list[i]->name,
                           p.name, e.what());
        return kExitInternal;
      }
      for (auto& [result, detail] : results) {
        write_row(out, widths, result);
        for (const auto& b : result.breaches) {
          failures.push_back(widths.backend == 0 ? b.message : result.backend + ": " + b.message);
        }
        nlohmann::json record = audit::to_json(result);
        if (result.backend == "cuda") {
          record["device"] = cuda.device;
          record["cuda"] = std::move(detail);
        }
        records.push_back(std::move(record));
      }
      if (planned != nullptr && !planned->plan) {
        write_not_run(out, widths, c, planned->reason);
        records.push_back(not_run_record(c, planned->reason));
      }
      if (!args.json.empty() && !write_records(args.json, records, expected,
                                               records.size() == expected, cuda_unavailable, err)) {
        return kExitUsage;
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto count = [&](const char* status) {
    return std::count_if(records.begin(), records.end(),
                         [&](const auto& r) { return r["status"] == status; });
  };
  out << fmt::format("\n{} case(s) in {:.1f} s, {} failed{}.\n", records.size(), seconds,
                     count("FAIL"),
                     on_cuda ? fmt::format(", {} not run on cuda", count("NOT_RUN")) : "");
  for (const auto& f : failures) out << "FAIL " << f << '\n';
  out << "max_ulp/mean_ulp: ulps of the output format from the correctly rounded result; "
         "normwise: ||c - x|| / ||x||;\nbound: largest error / a-priori bound; CR%: outputs "
         "correctly rounded; uflow/oflow/nan: output rounding events.\n";
  return failures.empty() ? kExitOk : kExitFail;
}

}  // namespace ampbench::cli
