// ampbench run: a suite's cases one after the other, a line per case as it finishes, and the
// result record DIR/result.json rewritten (atomically) after every case, so that a run that stops
// leaves the finished cases readable: the record says which cases it expects, and it is complete
// only after the last. The finished run is then recorded in the history database. The suite, the
// shard, the output directory and the history, and that no output is an input or another output,
// are checked before any case runs. A standard output that goes away (`| head -1`) stops nothing:
// the cases run, the record and the history are written (main then reports the lost output).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <system_error>
#include <vector>

#include "harness/cli/backend_options.hpp"
#include "harness/cli/build_info.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/file_plan.hpp"
#include "harness/results/history.hpp"
#include "harness/results/record.hpp"
#include "harness/results/suite.hpp"
#include "harness/runtime/cuda.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench run";

// The number a reader looks at first: an audit case's normwise error and largest ulp error, a
// training run's largest eval-loss error of its policies, a profile run's step time per policy, a
// fingerprint's parameters off the preset.
std::string key_metric(const results::Record& r) {
  const auto get = [&](const std::string& name, const char* format) -> std::string {
    const auto it = r.metrics.find(name);
    return it == r.metrics.end() ? "-" : fmt::format(fmt::runtime(format), it->second);
  };
  if (r.kind == "audit") {
    return fmt::format("normwise {}  max_ulp {}", get("normwise_rel_error", "{:.3g}"),
                       get("max_ulp", "{:.0f}"));
  }
  if (r.kind == "profile") {
    std::string times;
    for (const auto& [name, value] : r.metrics) {
      if (!name.ends_with(".step_ms")) continue;
      times += fmt::format("{}{} {:.2f} ms", times.empty() ? "step " : ", ",
                           name.substr(0, name.size() - 8), value);
    }
    return times;
  }
  if (r.kind == "recipe") {
    std::string errors;
    for (const char* gemm : {"fprop", "dgrad", "wgrad"}) {
      const auto it = r.metrics.find(std::string(gemm) + ".total_error");
      if (it == r.metrics.end()) continue;
      errors += fmt::format("{}{} {:.3g}", errors.empty() ? "total " : ", ", gemm, it->second);
    }
    return errors;
  }
  if (r.kind == "fingerprint") {
    return fmt::format("{} parameter(s), {} off the preset", r.features.size(), r.breaches.size());
  }
  double worst = 0;
  for (const auto& [name, value] : r.metrics) {
    if (name.ends_with(".eval_loss_error")) worst = std::max(worst, value);
  }
  return fmt::format("worst eval_loss_error {:.3g}", worst);
}

// history.sqlite in the directory that holds the results directory: results/history.sqlite for
// results/<suite>, one database for every suite and shard run there.
std::string default_history_path(const std::filesystem::path& directory) {
  const auto results = directory.has_filename() ? directory : directory.parent_path();
  return (results.parent_path() / "history.sqlite").string();
}

}  // namespace

int run_suite(const RunArgs& args, std::ostream& out, std::ostream& err) {
  // ---- everything is checked before any work starts -----------------------------------------
  results::Suite suite;
  try {
    suite = results::load_suite(args.suite);
  } catch (const std::exception& e) {
    err << fmt::format("{}: {}\n", kCommand, e.what());
    return kExitUsage;
  }
  results::Shard shard;
  try {
    shard = results::parse_shard(args.shard);
  } catch (const std::invalid_argument& e) {
    err << fmt::format("{}: --shard {}\n", kCommand, e.what());
    return kExitUsage;
  }
  // The backends: the CPU, the GPU or both. A GPU that cannot be used stops `cuda` here, before
  // any work; `all` then runs the CPU alone and says so.
  const std::optional<runtime::Request> request = read_backend(kCommand, args.backend, err);
  if (!request) return kExitUsage;
  // Probed whatever the backend: the run's environment names the GPU, or why there is none.
  const runtime::Opening opened = runtime::opening_for(*request, runtime::probe_cuda());
  if (refused(kCommand, opened, err)) return kExitNoDevice;
  const runtime::CudaStatus& cuda = opened.cuda;
  const std::vector<std::string> backends = runtime::names_of(opened.runs);
  // What the CUDA backend cannot run is listed, never silently left out.
  const results::BackendCases on_backends =
      results::on_backends(suite.cases, backends, runtime::why_not_on, runtime::narrow_to);
  const results::BackendRunners on_cuda = runtime::cuda_runners(cuda);

  const std::filesystem::path directory = args.out.empty()
                                              ? std::filesystem::path("results") / suite.name
                                              : std::filesystem::path(args.out);
  // An explicit --out must name a directory in an existing one (a typo in its path should not
  // create a tree elsewhere); the default results/<suite> is created with its parent.
  const auto parent = directory.parent_path();
  if (!args.out.empty() && !parent.empty() && !std::filesystem::is_directory(parent)) {
    err << fmt::format("{}: --out {}: directory {} does not exist\n", kCommand, directory.string(),
                       parent.string());
    return kExitUsage;
  }
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec || !std::filesystem::is_directory(directory)) {
    err << fmt::format("{}: --out {}: cannot create the directory ({})\n", kCommand,
                       directory.string(), ec ? ec.message() : "a file of that name exists");
    return kExitUsage;
  }
  const std::string result_path = (directory / "result.json").string();
  const std::string history_path = args.history == "none" ? std::string()
                                   : args.history.empty() ? default_history_path(directory)
                                                          : args.history;
  FilePlan files;
  for (const auto& file : suite.files) files.input("the suite's file", file);
  files.output("the result record", result_path);
  if (!history_path.empty()) files.database("--history", history_path);
  if (const auto problem = files.problem()) {
    err << fmt::format("{}: {}\n", kCommand, *problem);
    return kExitUsage;
  }
  std::unique_ptr<results::History> history;
  if (!history_path.empty()) {
    try {
      history = std::make_unique<results::History>(history_path, results::History::Open::create);
    } catch (const results::HistoryError& e) {
      err << fmt::format("{}: --history {}: {}\n", kCommand, history_path, e.what());
      return kExitUsage;
    }
  }

  // ---- the cases ------------------------------------------------------------------------------
  const auto cases = results::select_shard(on_backends.cases, shard);
  results::Environment environment = results::host_environment();
  environment.ampbench_version = build_info::kVersion;
  environment.git_revision = build_info::kGitRevision;
  environment.compiler = fmt::format("{} {}", build_info::kCompiler, build_info::kCompilerVersion);
  environment.build_type = build_info::kBuildType;
  environment.cuda = build_info::kCuda;
  environment.gpu = cuda.gpu;
  environment.cuda_libraries = cuda.libraries;
  // The suite's models, not the shard's, so that every shard of a run names the same device.
  std::vector<std::string> suite_keys;
  for (const auto& c : on_backends.cases) suite_keys.push_back(c.key);
  environment.device =
      opened.runs.cuda ? cuda.gpu_device
                       : results::cpu_emulation(environment.cpu, results::mma_of_keys(suite_keys));
  environment.seed = suite.seed;
  environment.started = results::utc_now();
  out << fmt::format("suite {}: {} of {} case(s) (shard {}); budgets: {}; results: {}\n",
                     suite.name, cases.size(), on_backends.cases.size(), results::to_string(shard),
                     suite.budgets_path.empty() ? "built-in only" : suite.budgets_path,
                     result_path);
  if (*request != runtime::Request::cpu) {
    out << fmt::format(
        "backends: {}{}\n", fmt::join(backends, ", "),
        opened.cpu_alone.empty() ? "" : fmt::format(" (cuda unavailable: {})", opened.cpu_alone));
  }
  nlohmann::json not_run = nlohmann::json::array();
  for (const auto& [key, why] : on_backends.not_run) {
    out << fmt::format("not run: {}: {}\n", key, why);
    not_run.push_back({{"key", key}, {"why", why}});
  }
  out.flush();
  // The cases this record should hold, and for a shard the suite's, by which merge orders them.
  results::Expected expected;
  for (const auto& c : cases) expected.keys.push_back(c.key);
  if (shard.count > 1) {
    for (const auto& c : on_backends.cases) expected.suite_keys.push_back(c.key);
  }
  nlohmann::json records = nlohmann::json::array();
  nlohmann::json document;
  // Written before the first case too, so that a shard without cases still leaves a record; it
  // is complete only when written after the last case.
  const auto write_result = [&](bool complete) {
    environment.finished = results::utc_now();
    document =
        results::result_document(suite.name, shard, environment, records, expected, complete);
    document["backend"] = args.backend;
    document["tolerance"] = suite.tolerance;
    if (!opened.cpu_alone.empty()) document["cuda_unavailable"] = opened.cpu_alone;
    document["not_run"] = not_run;
    if (auto problem = write_json_file(result_path, document)) {
      err << fmt::format("{}: {}: {}\n", kCommand, result_path, *problem);
      return false;
    }
    return true;
  };
  if (!write_result(cases.empty())) return kExitUsage;
  std::size_t failed = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const results::Record record = results::run_case(cases[i], suite.budgets, on_cuda);
    failed += record.pass ? 0 : 1;
    out << fmt::format("[{}/{}] {}  {}  {}  ({:.1f} s)\n", i + 1, cases.size(), record.key,
                       record.pass ? "PASS" : "FAIL", key_metric(record), record.seconds);
    for (const auto& breach : record.breaches) out << fmt::format("  {}\n", breach);
    out.flush();
    records.push_back(results::to_json(record));
    if (!write_result(i + 1 == cases.size())) return kExitUsage;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out << fmt::format("\n{} case(s) in {:.1f} s, {} failed. Record: {}\n", cases.size(), seconds,
                     failed, result_path);
  // The result is on disk before the history is touched: a history that cannot take the run
  // loses nothing, and the run can be added later.
  if (history) {
    try {
      const auto recorded = history->add(results::history_run(document, result_path));
      if (recorded.added) {
        out << fmt::format("History: run {} in {}{}\n", recorded.run_id, history->path(),
                           recorded.replaced_partial
                               ? " (replacing the partial record of this run added before)"
                               : "");
      } else {
        out << fmt::format("History: already recorded as run {} in {}; not added again\n",
                           recorded.run_id, history->path());
      }
    } catch (const std::exception& e) {  // HistoryError, or ResultError for a record it misreads
      err << fmt::format(
          "{}: {}\n{}: the run is not in the history; its record {} is complete: add it with "
          "'ampbench history --add {} --db {}'\n",
          kCommand, e.what(), kCommand, result_path, result_path, history->path());
      return kExitUsage;
    }
  }
  return failed == 0 ? kExitOk : kExitFail;
}

}  // namespace ampbench::cli
