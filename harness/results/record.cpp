#include "harness/results/record.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "harness/fingerprint/record.hpp"
#include "harness/train/profile_record.hpp"

namespace ampbench::results {
namespace {

void put(std::map<std::string, double>& metrics, const std::string& name, double value) {
  if (std::isfinite(value)) metrics[name] = value;
}

Record run_audit_case(const audit::Case& c, const std::string& backend,
                      const std::vector<audit::Budget>& budgets, const KernelFor& kernel_for) {
  nlohmann::json ran;
  const audit::CaseResult result =
      backend == "cpu" ? audit::run_case(c, budgets)
                       : audit::run_kernel_case(c, kernel_for(c, &ran), backend, budgets);
  Record record;
  record.kind = "audit";
  record.pass = result.pass();
  for (const auto& b : result.breaches) record.breaches.push_back(b.message);
  record.detail = audit::to_json(result);
  if (!ran.is_null()) record.detail["ran"] = std::move(ran);
  record.metrics = audit_metrics(record.detail);
  return record;
}

Record run_training(const train::TrainConfig& config, const BackendRunners& runners) {
  const train::Dataset data = train::default_dataset(config.model, config.seed);
  const train::Split split = train::split(data, kSuiteEvalSamples, config.seed);
  const train::TrainResult result = runners.train ? runners.train(config, split.train, split.eval)
                                                  : train::train(config, split.train, split.eval);
  Record record;
  record.kind = "train";
  record.pass = true;
  for (const auto& run : result.runs) {
    record.pass = record.pass && run.pass;
    if (!run.pass) record.breaches.push_back(fmt::format("{}: {}", run.policy, run.verdict));
  }
  record.metrics = train_metrics(result);
  record.detail = train::to_json(result);
  return record;
}

Record run_profile(const ProfileConfig& profile, const BackendRunners& runners,
                   std::string_view backend) {
  const train::Dataset data = train::default_dataset(profile.config.model, profile.config.seed);
  const train::ProfileResult result =
      runners.profile ? runners.profile(profile.config, data, profile.warmup)
                      : train::profile_steps(profile.config, data, profile.warmup);
  Record record;
  record.kind = "profile";
  record.pass = true;
  record.metrics = profile_metrics(result);
  record.detail = train::to_json(result, backend);
  return record;
}

Record run_fingerprint(const FingerprintCase& c, const BackendRunners& runners) {
  nlohmann::json ran;
  const std::unique_ptr<fingerprint::Executor> executor =
      runners.fingerprint ? runners.fingerprint(c, &ran)
                          : std::make_unique<fingerprint::ModelExecutor>(c.preset);
  const fingerprint::Fingerprint fp = fingerprint::take_fingerprint(*executor);
  // A device is judged against its own architecture's preset for the case's formats (the runner
  // names the architecture in `ran`), as `ampbench fingerprint --backend cuda` judges it: an A100
  // is no failed Hopper. The case's preset stands when the device has none for those formats.
  numeric::MmaModel compared = c.preset;
  if (const auto arch = ran.find("architecture"); arch != ran.end() && arch->is_string()) {
    if (auto own =
            numeric::mma_model(arch->get<std::string>(), c.preset.input, c.preset.accumulator())) {
      compared = *own;
    }
  }
  const std::vector<fingerprint::Comparison> rows =
      fingerprint::compare(fp.parameters, fingerprint::predicted_parameters(compared));
  Record record;
  record.kind = "fingerprint";
  record.pass = fingerprint::all_match(rows);
  for (const auto& row : rows) {
    record.features[row.parameter] = row.inferred;
    if (!row.match) {
      record.breaches.push_back(fmt::format("{}: inferred {}, the preset {} has {}", row.parameter,
                                            row.inferred, compared.name, row.preset));
    }
  }
  record.detail = fingerprint::to_json(fp, compared, rows);
  if (!ran.is_null()) record.detail["ran"] = std::move(ran);
  return record;
}

Record run_recipe(const audit::RecipeCase& c, const audit::RecipeDevice& device) {
  const audit::RecipeCaseResult result = audit::run_recipe_case(c, device);
  Record record;
  record.kind = "recipe";
  record.pass = result.pass();
  record.breaches = result.breaches;
  record.metrics = recipe_metrics(result);
  record.detail = audit::to_json(result);
  return record;
}

}  // namespace

Environment host_environment() {
  Environment environment;
  std::ifstream file("/proc/cpuinfo");
  std::stringstream cpuinfo;
  cpuinfo << file.rdbuf();
  environment.cpu = cpu_model(cpuinfo.str());
  environment.cores = std::thread::hardware_concurrency();
  char host[256] = {};
  environment.hostname = gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  return environment;
}

std::string cpu_model(std::string_view cpuinfo) {
  std::istringstream lines{std::string(cpuinfo)};
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("model name")) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto first = line.find_first_not_of(" \t", colon + 1);
    if (first != std::string::npos) return line.substr(first);
  }
  return "unknown";
}

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto milliseconds =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03}Z", text, milliseconds);
}

nlohmann::json to_json(const Environment& e) {
  return {{"ampbench_version", e.ampbench_version},
          {"git_revision", e.git_revision},
          {"compiler", e.compiler},
          {"build_type", e.build_type},
          {"cuda", e.cuda},
          {"gpu", e.gpu},
          {"cuda_libraries", e.cuda_libraries},
          {"device", to_json(e.device)},
          {"cpu", e.cpu},
          {"cores", e.cores},
          {"hostname", e.hostname},
          {"seed", e.seed},
          {"started", e.started},
          {"finished", e.finished}};
}

Record run_case(const SuiteCase& c, const std::vector<audit::Budget>& budgets,
                const BackendRunners& runners) {
  const auto start = std::chrono::steady_clock::now();
  Record record;
  try {
    const bool elsewhere = c.backend != "cpu";
    const bool runnable = c.kind() == "audit"     ? static_cast<bool>(runners.kernel)
                          : c.kind() == "train"   ? static_cast<bool>(runners.train)
                          : c.kind() == "profile" ? static_cast<bool>(runners.profile)
                          : c.kind() == "recipe"  ? static_cast<bool>(runners.recipe)
                                                  : static_cast<bool>(runners.fingerprint);
    if (elsewhere && !runnable) {
      throw std::invalid_argument(fmt::format("no {} backend for this case", c.backend));
    }
    const BackendRunners none;
    const BackendRunners& on = elsewhere ? runners : none;
    if (const auto* audit_case = std::get_if<audit::Case>(&c.work)) {
      record = run_audit_case(*audit_case, c.backend, budgets, on.kernel);
    } else if (const auto* training = std::get_if<train::TrainConfig>(&c.work)) {
      record = run_training(*training, on);
    } else if (const auto* profile = std::get_if<ProfileConfig>(&c.work)) {
      record = run_profile(*profile, on, c.backend);
    } else if (const auto* recipe = std::get_if<audit::RecipeCase>(&c.work)) {
      record = run_recipe(*recipe, on.recipe);
    } else {
      record = run_fingerprint(std::get<FingerprintCase>(c.work), on);
    }
  } catch (const std::exception& e) {
    record = Record{};
    record.kind = std::string(c.kind());
    record.pass = false;
    record.breaches.push_back(fmt::format("error: {}", e.what()));
    record.detail = nullptr;
  }
  record.key = c.key;
  record.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return record;
}

std::map<std::string, double> audit_metrics(const nlohmann::json& audit_case) {
  std::map<std::string, double> metrics;
  for (const char* name : {"max_ulp", "mean_ulp", "normwise_rel_error", "componentwise_rel_error",
                           "bound_ratio", "fraction_correctly_rounded"}) {
    const auto& value = audit_case[name];
    if (value.is_number()) put(metrics, name, value.get<double>());
  }
  // NaN/Inf disagreements and values outside the format; agreements (both NaN, both Inf) are not.
  double mismatches = 0;
  for (const char* name : {"nan_vs_number", "number_vs_nan", "inf_vs_finite", "finite_vs_inf",
                           "opposite_inf", "not_in_format"}) {
    mismatches += audit_case["mismatches"][name].get<double>();
  }
  metrics["mismatches"] = mismatches;
  return metrics;
}

std::map<std::string, double> train_metrics(const train::TrainResult& result) {
  std::map<std::string, double> metrics;
  const double reference_loss = result.reference.eval_loss;
  put(metrics, "reference.eval_loss", reference_loss);
  put(metrics, "reference.eval_accuracy", result.reference.eval_accuracy);
  for (const auto& run : result.runs) {
    const std::string& p = run.policy;
    put(metrics, p + ".eval_loss", run.eval_loss);
    put(metrics, p + ".eval_accuracy", run.eval_accuracy);
    put(metrics, p + ".eval_loss_error",
        std::abs(run.eval_loss - reference_loss) / std::abs(reference_loss));
    double max_loss_error = 0;
    for (const auto& step : run.steps) {
      if (step.loss_error) max_loss_error = std::max(max_loss_error, *step.loss_error);
    }
    put(metrics, p + ".max_loss_error", max_loss_error);
    double divergence = 0;
    for (const double d : run.weight_divergence) divergence = std::max(divergence, d);
    put(metrics, p + ".weight_divergence", divergence);
    metrics[p + ".skipped_steps"] = static_cast<double>(run.skipped_steps.size());
  }
  return metrics;
}

std::map<std::string, double> recipe_metrics(const audit::RecipeCaseResult& result) {
  std::map<std::string, double> metrics;
  for (const audit::RecipeGemmResult& g : result.gemms) {
    const std::string p(quant::gemm_name(g.gemm));
    put(metrics, p + ".total_error", g.total.max_normwise);
    put(metrics, p + ".mean_total_error", g.total.mean_normwise);
    put(metrics, p + ".frobenius_error", g.total.frobenius);
    put(metrics, p + ".quantization_error", g.quantization.max_normwise);
    put(metrics, p + ".accumulation_error", g.accumulation.max_normwise);
    metrics[p + ".saturated"] = static_cast<double>(g.a.events.saturated + g.b.events.saturated);
    metrics[p + ".flushed"] = static_cast<double>(g.a.events.flushed + g.b.events.flushed);
    metrics[p + ".nonfinite"] = static_cast<double>(g.nonfinite);
    if (g.vs_model) metrics[p + ".model_differing"] = static_cast<double>(g.vs_model->differing);
  }
  return metrics;
}

std::map<std::string, double> profile_metrics(const train::ProfileResult& result) {
  std::map<std::string, double> metrics;
  const std::vector<double> ratios = train::vs_fp32(result);
  for (std::size_t i = 0; i < result.policies.size(); ++i) {
    const auto& p = result.policies[i];
    put(metrics, p.policy + ".step_ms", train::step_times(p.step_ns).median_ms);
    if (ratios[i] > 0) put(metrics, p.policy + ".vs_fp32", ratios[i]);
  }
  return metrics;
}

nlohmann::json to_json(const Record& r) {
  nlohmann::json record{
      {"key", r.key},           {"kind", r.kind},       {"status", r.pass ? "pass" : "fail"},
      {"breaches", r.breaches}, {"metrics", r.metrics}, {"seconds", r.seconds}};
  if (!r.features.empty()) record["features"] = r.features;
  record["detail"] = r.detail;
  return record;
}

nlohmann::json result_document(std::string_view suite, const Shard& shard,
                               const Environment& environment, const nlohmann::json& records,
                               const Expected& expected, bool complete) {
  nlohmann::json cases{{"cases", expected.keys.size()}, {"keys", expected.keys}};
  if (!expected.suite_keys.empty()) cases["suite_keys"] = expected.suite_keys;
  nlohmann::json document{{"schema", std::string(kResultSchema)},
                          {"suite", std::string(suite)},
                          {"shard", to_string(shard)},
                          {"environment", to_json(environment)},
                          {"expected", std::move(cases)},
                          {"complete", complete}};
  if (!complete) {
    std::set<std::string> ran;
    for (const auto& record : records) ran.insert(record.value("key", std::string()));
    nlohmann::json missing = nlohmann::json::array();
    for (const auto& key : expected.keys) {
      if (!ran.contains(key)) missing.push_back(key);
    }
    document["missing"] = std::move(missing);
  }
  document["records"] = records;
  return document;
}

}  // namespace ampbench::results
