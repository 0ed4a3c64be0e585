// Declarative suites (suites/*.toml, docs/results.md): a named list of audit cases, training runs
// and profile runs. Everything a suite names is checked when it is read, so that a typo stops the
// run before any case starts; the suite then expands to cases with stable keys, in a deterministic
// order that shards split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "harness/audit/audit.hpp"
#include "harness/audit/budgets.hpp"
#include "harness/audit/recipe_audit.hpp"
#include "harness/numeric/mma.hpp"
#include "harness/train/trainer.hpp"

namespace ampbench::results {

// A suite that cannot be read: what() is "FILE:LINE:COLUMN: [[table]] key: what is wrong".
class SuiteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The samples a suite's training run holds out of its model's default data set for evaluation
// (record.cpp's run_training); it trains on the rest.
inline constexpr std::size_t kSuiteEvalSamples = 512;

// A profile run: each policy's training steps timed phase by phase on the CPU backend, after
// `warmup` untimed ones (train::profile_steps; `ampbench profile`).
struct ProfileConfig {
  train::TrainConfig config;
  std::size_t warmup = 3;
};

// A fingerprint case: the Tensor Core feature tests (harness/fingerprint/) with the preset's input
// format and accumulator, their inferred parameters compared with the preset's (`ampbench
// fingerprint --preset P`). On the CPU the preset's model answers the probes; on the GPU the
// device's matrix instructions, chosen by `instruction`.
struct FingerprintCase {
  numeric::MmaModel preset;
  std::string instruction = "auto";  // "auto", "mma" or "wgmma"
};

// One case of a suite: an audit case, a training run holding all its policies, a profile run, a
// fingerprint, or a linear layer's GEMMs under an FP8 or microscaling recipe.
struct SuiteCase {
  // "audit/gemm/128x128x128/amp-fp16/normal/seed=1", "train/mlp/steps=20/seed=1",
  // "profile/mlp/steps=20/warmup=3/seed=1", "fingerprint/hopper-fp16[/instruction=wgmma]",
  // "recipe/fp8-block/256x256x256/hopper/normal/seed=1[/promote=N]"
  std::string key;
  std::variant<audit::Case, train::TrainConfig, ProfileConfig, FingerprintCase, audit::RecipeCase>
      work;
  std::string backend = "cpu";  // what runs it: "cpu", or "cuda"
  // "audit", "train", "profile", "fingerprint" or "recipe": the record's kind and the key's first
  // part.
  std::string_view kind() const;
};

struct Suite {
  std::string name;
  std::string description;
  std::uint64_t seed = 1;
  // The relative change for the worse that compare still accepts against a result of this suite
  // used as the baseline (--tolerance overrides it).
  double tolerance = 0.1;
  std::string budgets_path;  // empty: no budgets file (the built-in rules only)
  std::vector<audit::Budget> budgets;
  // audit entries in file order, then training, profile, fingerprint and recipe entries
  std::vector<SuiteCase> cases;
  // Every file the suite reads: the suite itself (load_suite), its budgets, its policy files and
  // the tensor files of its file: distributions; what a run must not write over.
  std::vector<std::string> files;
};

// The most cases a suite may expand to: each holds its policy, and a few lines of lists could
// otherwise make millions of them before any check. audit-full has about 1500.
inline constexpr std::size_t kMaxSuiteCases = 100000;

// Reads a suite. `source_name` names it in messages; relative policy files and the budgets file
// are found in `directory` (the suite file's), where budgets.toml is the default budgets file. A
// budget of the budgets file for a policy that is neither built in nor one of the suite's is an
// error (audit::check_policies).
Suite parse_suite(std::string_view text, std::string_view source_name,
                  const std::filesystem::path& directory);
Suite load_suite(const std::string& path);

// The cases on each backend of `backends` (in that order, case by case, so that the order stays
// deterministic for shards): the CPU's cases as they are, another backend's with "/backend=NAME"
// added to the key, for the cases `why_not` has no objection to; the others are listed with the
// reason (an op that backend cannot run yet, a training run). `narrow`, when given, first takes
// out of a case on a backend the parts it cannot run while the rest runs (a training run's
// recipes this device cannot multiply), giving each part's key suffix and why: each is listed as
// "KEY/SUFFIX" (KEY the case's key on that backend) when the rest runs; a case `why_not` then
// refuses is listed whole, once.
struct BackendCases {
  std::vector<SuiteCase> cases;
  std::vector<std::pair<std::string, std::string>> not_run;  // key on that backend, why
};
using Narrowing = std::function<std::vector<std::pair<std::string, std::string>>(
    SuiteCase& c, const std::string& backend)>;
BackendCases on_backends(
    const std::vector<SuiteCase>& cases, const std::vector<std::string>& backends,
    const std::function<std::optional<std::string>(const SuiteCase&, const std::string& backend)>&
        why_not,
    const Narrowing& narrow = {});

// The key of an audit case in a record: "audit/OP/SHAPE/POLICY/DIST/seed=N", then "/mma=NAME" and
// "/samples=K" where they apply.
struct AuditKey {
  std::string_view op;
  std::string_view shape;
  std::string_view policy;
  std::string_view distribution;
  std::uint64_t seed;
  std::string_view mma;
  std::size_t samples;
};
std::string audit_key(const AuditKey& key);

// Which cases a run takes: those whose index in the suite's order is index % count == index.
struct Shard {
  std::size_t index = 0;
  std::size_t count = 1;
};
// "I/N" with N >= 1 and I < N; std::invalid_argument says what is wrong.
Shard parse_shard(std::string_view text);
std::string to_string(const Shard& shard);
std::vector<SuiteCase> select_shard(const std::vector<SuiteCase>& cases, const Shard& shard);

}  // namespace ampbench::results
