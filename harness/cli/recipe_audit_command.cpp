// ampbench audit --recipe: linear's GEMMs (or, with --op conv2d, a convolution's, as the GEMMs it
// lowers to) quantized as FP8 and microscaling recipes quantize them,
// multiplied on a Tensor Core model or exactly, judged against the exact product of the
// unquantized inputs with the error split into quantization and accumulation (docs/scaling.md).
// Bad input is reported before any work starts; the --json file is rewritten (atomically) after
// every case, so the records of finished cases stay valid whatever happens to later ones.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "harness/audit/recipe_audit.hpp"
#include "harness/cli/backend_options.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/file_plan.hpp"
#include "harness/cli/text.hpp"
#include "harness/io/json_arrays.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/ops/convolution.hpp"
#include "harness/quant/recipe.hpp"
#include "harness/quant/recipe_gemm.hpp"
#include "harness/results/suite.hpp"
#include "harness/runtime/cuda.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench audit";

// The audit's options that mean nothing for a recipe's GEMMs.
constexpr const char* kNotWithRecipe[] = {"--all",          "--policy",    "--samples",
                                          "--gemm-compute", "--conv-math", "--summation",
                                          "--mma",          "--budgets"};

std::string sci(double v) {
  return fmt::format("{:.2e}", v);
}

bool write_records(const std::string& path, const nlohmann::json& records, std::size_t expected,
                   bool complete, std::ostream& err) {
  const nlohmann::json document{{"schema", "ampbench.audit-recipe/1"},
                                {"expected", expected},
                                {"complete", complete},
                                {"cases", records}};
  if (auto problem = write_json_file(path, document)) {
    err << fmt::format("{}: --json {}: {}\n", kCommand, path, *problem);
    return false;
  }
  return true;
}

// The product a GEMM forms, in the operands' names: fprop x w^T, dgrad dy w, wgrad dy^T x; a
// convolution's as its lowered operands (the record's layouts).
const char* formula(quant::Gemm g, bool conv) {
  switch (g) {
    case quant::Gemm::fprop: return conv ? "im2col(x) w^T" : "x w^T";
    case quant::Gemm::dgrad: return conv ? "dy w^T, lowered" : "dy w";
    case quant::Gemm::wgrad: return conv ? "dy^T im2col(x)" : "dy^T x";
  }
  return "";
}

}  // namespace

int run_recipe_audit(const AuditArgs& args, std::ostream& out, std::ostream& err) {
  // ---- everything is checked before any work starts -----------------------------------------
  for (const char* option : kNotWithRecipe) {
    if (std::find(args.given.begin(), args.given.end(), option) != args.given.end()) {
      err << fmt::format(
          "{}: {} does not go with --recipe (the recipe audit runs linear's, bmm's or conv2d's "
          "GEMMs on the Tensor Core models or cuBLASLt's scaled GEMMs; docs/scaling.md)\n",
          kCommand, option);
      return kExitUsage;
    }
  }
  // cpu multiplies on the Tensor Core models; cuda on the device's cuBLASLt, each product also
  // compared with the model's.
  constexpr runtime::Request kRecipeBackends[] = {runtime::Request::cpu, runtime::Request::cuda};
  const std::optional<runtime::Request> request =
      read_backend(kCommand, args.backend, err, kRecipeBackends);
  if (!request) return kExitUsage;
  const runtime::Opening opened = runtime::open_backends(*request);
  if (refused(kCommand, opened, err)) return kExitNoDevice;
  const bool on_cuda = opened.runs.cuda;
  const std::string op_name = args.op.empty() ? "linear" : args.op;
  if (std::find(std::begin(audit::kRecipeOps), std::end(audit::kRecipeOps), op_name) ==
      std::end(audit::kRecipeOps)) {
    err << fmt::format(
        "{}: --op {}: the audit under a recipe runs the three GEMMs (fprop, dgrad, wgrad) of "
        "linear, bmm or conv2d; give --op linear (the default), bmm or conv2d\n",
        kCommand, args.op);
    return kExitUsage;
  }
  const bool conv = op_name == "conv2d";
  const ops::OpInfo& op = *ops::find_op(op_name);
  ops::Shape shape;
  try {
    shape = ops::parse_shape(op, !args.shape.empty() ? std::string_view(args.shape)
                                 : conv              ? audit::kRecipeConvShape
                                 : op_name == "bmm"  ? audit::kRecipeBmmShape
                                                     : std::string_view(op.default_shape));
  } catch (const ops::OpError& e) {
    err << fmt::format("{}: --shape: {}\n", kCommand, e.what());
    return kExitUsage;
  }
  std::vector<quant::Gemm> gemms;
  for (const std::string& name : split_list(args.gemms)) {
    const auto g = quant::gemm_from_name(name);
    if (!g) {
      err << fmt::format("{}: --gemm: unknown GEMM '{}' (fprop, dgrad, wgrad)\n", kCommand, name);
      return kExitUsage;
    }
    if (std::find(gemms.begin(), gemms.end(), *g) == gemms.end()) gemms.push_back(*g);
  }
  if (gemms.empty()) {
    err << fmt::format("{}: --gemm: no GEMM named (fprop, dgrad, wgrad)\n", kCommand);
    return kExitUsage;
  }

  FilePlan files;
  std::vector<audit::RecipeCase> cases;
  std::vector<std::string> notes;
  for (const std::string& name : split_list(args.recipes)) {
    audit::RecipeCase c;
    try {
      c.recipe = quant::recipe_by_name_or_file(name);
    } catch (const quant::RecipeError& e) {
      err << fmt::format("{}: --recipe {}\n", kCommand, e.what());
      return kExitUsage;
    }
    if (quant::find_recipe(name) == nullptr) files.input("--recipe", name);
    audit::set_shape(c, op_name, shape);
    c.distribution = args.dist;
    c.seed = args.seed;
    c.gemms = gemms;
    if (std::find(args.given.begin(), args.given.end(), "--promote-interval") != args.given.end()) {
      c.promote_interval = args.promote_interval;
    }
    if (args.arch.empty()) {
      const quant::DefaultArch arch = quant::default_arch(c.recipe, c.gemms);
      c.arch = arch.arch;
      if (!arch.note.empty()) notes.push_back(arch.note);
    } else {
      c.arch = args.arch;
    }
    if (const auto why = audit::why_not_runnable(c)) {
      err << fmt::format("{}: {}: {}\n", kCommand,
                         args.arch.empty() ? "--recipe" : "--arch " + args.arch, *why);
      return kExitUsage;
    }
    if (on_cuda) {
      results::SuiteCase on_device;
      on_device.work = c;
      if (const auto why = runtime::why_not_on(on_device, "cuda")) {
        err << fmt::format("{}: --backend cuda: {}\n", kCommand, *why);
        return kExitUsage;
      }
    }
    cases.push_back(std::move(c));
  }
  if (cases.empty()) {
    err << fmt::format("{}: --recipe: no recipe named (known: {})\n", kCommand,
                       quant::builtin_recipe_names());
    return kExitUsage;
  }
  if (const auto problem = plan_distribution(files, args.dist)) {
    err << fmt::format("{}: {}\n", kCommand, *problem);
    return kExitUsage;
  }
  if (!args.json.empty()) files.output("--json", args.json);
  if (const auto problem = files.problem()) {
    err << fmt::format("{}: {}\n", kCommand, *problem);
    return kExitUsage;
  }

  // ---- the cases ------------------------------------------------------------------------------
  if (conv) {
    const ops::convolution::Geometry& v = *cases[0].conv;
    out << fmt::format(
        "conv2d {} (x {}x{}x{}x{}, w {}x{}x{}x{}, dy {}x{}x{}x{}; as im2col GEMMs), dist {}, seed "
        "{}\n",
        ops::to_string(shape), v.batch, v.channels, v.height, v.width, v.filters, v.channels,
        v.kernel_h, v.kernel_w, v.batch, v.filters, v.out_h(), v.out_w(), args.dist, args.seed);
  } else if (cases[0].batch) {
    const audit::RecipeCase& c = cases[0];
    out << fmt::format(
        "bmm {} (x {}x{}x{}, w {}x{}x{}, dy {}x{}x{}; each operand quantized over the batch), "
        "dist {}, seed {}\n",
        ops::to_string(shape), *c.batch, c.m, c.k, *c.batch, c.n, c.k, *c.batch, c.m, c.n,
        args.dist, args.seed);
  } else {
    out << fmt::format("linear {} (x {}x{}, w {}x{}, dy {}x{}), dist {}, seed {}\n",
                       ops::to_string(shape), cases[0].m, cases[0].k, cases[0].n, cases[0].k,
                       cases[0].m, cases[0].n, args.dist, args.seed);
  }
  for (const std::string& note : notes) out << "note: " << note << '\n';
  // Columns as wide as their content: the recipes' names and the models the GEMMs run on.
  std::size_t recipe_width = 8;
  std::size_t on_width = 15;
  for (const auto& c : cases) {
    recipe_width = std::max(recipe_width, c.recipe.name.size() + 2);
    for (const quant::Gemm g : c.gemms) {
      const auto choice = quant::recipe_mma(c.arch, c.recipe, g);
      on_width = std::max(on_width, (choice.mma ? choice.mma->name.size() : 5) + 2);
    }
  }
  const std::size_t product_width = conv ? 17 : 13;
  out << fmt::format("{:<{}}{:<7}{:<{}}{:<{}}{:>7}{:>10}{:>10}{:>10}{:>10}{:>8}{:>8}{:>6}  {}\n",
                     "recipe", recipe_width, "gemm", "product", product_width, "multiplied on",
                     on_width, "chunks", "total", "mean", "quant", "accum", "sat", "flush", "lost",
                     "status");
  nlohmann::json records = nlohmann::json::array();
  const std::size_t expected = cases.size();
  if (!args.json.empty() && !write_records(args.json, records, expected, false, err)) {
    return kExitUsage;
  }
  std::vector<std::string> failures;
  const results::BackendRunners device =
      on_cuda ? runtime::cuda_runners(opened.cuda) : results::BackendRunners{};
  if (on_cuda) out << "cuda: " << opened.cuda.gpu << '\n';
  const auto start = std::chrono::steady_clock::now();
  for (const audit::RecipeCase& c : cases) {
    audit::RecipeCaseResult r;
    try {
      r = audit::run_recipe_case(c, device.recipe);
    } catch (const io::InputError& e) {  // a file: distribution's values or shape
      out.flush();
      err << fmt::format("{}: {}: --dist {}: {}\n", kCommand, c.recipe.name, args.dist, e.what());
      return kExitUsage;
    } catch (const std::exception& e) {
      out.flush();
      err << fmt::format("{}: {}: could not compute: {}\n", kCommand, c.recipe.name, e.what());
      return kExitInternal;
    }
    for (const audit::RecipeGemmResult& g : r.gemms) {
      const auto events = [&](auto member) { return g.a.events.*member + g.b.events.*member; };
      out << fmt::format(
          "{:<{}}{:<7}{:<{}}{:<{}}{:>7}{:>10}{:>10}{:>10}{:>10}{:>8}{:>8}{:>6}  {}\n", r.recipe,
          recipe_width, quant::gemm_name(g.gemm), formula(g.gemm, conv), product_width,
          g.multiplied_on, on_width, g.chunks, sci(g.total.max_normwise),
          sci(g.total.mean_normwise), sci(g.quantization.max_normwise),
          sci(g.accumulation.max_normwise), events(&quant::QuantEvents::saturated),
          events(&quant::QuantEvents::flushed), events(&quant::QuantEvents::blocks_lost),
          g.nonfinite == 0 ? "PASS" : "FAIL");
      if (g.vs_model) {
        out << fmt::format("  {} outputs of {} differ from {}'s, by at most {} of sum |a b|\n",
                           g.vs_model->differing, g.vs_model->outputs, g.vs_model->model,
                           sci(g.vs_model->max_normwise));
      }
    }
    failures.insert(failures.end(), r.breaches.begin(), r.breaches.end());
    records.push_back(audit::to_json(r));
    if (!args.json.empty() &&
        !write_records(args.json, records, expected, records.size() == expected, err)) {
      return kExitUsage;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out << fmt::format("\n{} recipe(s) in {:.1f} s, {} failed.\n", records.size(), seconds,
                     std::count_if(records.begin(), records.end(),
                                   [](const auto& r) { return r["status"] == "FAIL"; }));
  for (const auto& f : failures) out << "FAIL " << f << '\n';
  if (on_cuda) {
    out << "multiplied on cuBLASLt: the device's scaled GEMM, fast accumulation where the "
           "promotion interval\nis 0 (its chunks are the library's own); each product beside "
           "the Tensor Core model's.\n";
  }
  out << "total, quant, accum: the largest |error| / sum |a b| over the outputs, of the result "
         "against the exact\nproduct of the inputs (mean: its mean), of the exact product of the "
         "dequantized operands against\nthe exact product, and of the result against the exact "
         "product of the dequantized operands;\nsat, flush, lost: elements saturated, nonzero "
         "inputs flushed to zero, blocks lost, in A and B.\n";
  return failures.empty() ? kExitOk : kExitFail;
}

}  // namespace ampbench::cli
