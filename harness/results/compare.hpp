// Comparing two result records (ampbench.result/1) case by case: what got worse beyond a relative
// tolerance (a regression), what got better, which cases newly fail, and which are new or gone.
// The rule, in docs/results.md: for a metric where larger is worse, the change new - base is a
// regression when it exceeds max(tolerance * |base|, floor); where larger is better, base - new
// is. The absolute floor keeps a change from 0 to 1e-30 from counting.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/results/device.hpp"

namespace ampbench::results {

// A document that is not an ampbench.result/1 record; what() names the source and the member.
class ResultError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ResultRecord {
  std::string key;
  bool pass = false;
  std::map<std::string, double> metrics;
  // A fingerprint's inferred parameters in words (record.hpp); empty for the other kinds and for
  // records from before ampbench wrote them.
  std::map<std::string, std::string> features;
};
// What a record says of its completeness (record.hpp, Expected): the cases it should hold, and
// whether its run finished.
struct Completeness {
  bool complete = false;
  std::vector<std::string> expected;    // in the order they run
  std::vector<std::string> suite_keys;  // a shard's: the whole suite's, in its order; else empty
  std::vector<std::string> missing;     // the expected cases without a record
};
struct ResultFile {
  std::string suite;
  // What ran the cases: the environment's device, or for a record from before it one derived
  // from its text (device.hpp); kind "unknown" when the record does not say (a hand-written one).
  Device device;
  std::optional<double> tolerance;  // the suite's, when the record carries it
  // Nothing for a record written before ampbench recorded it: completeness unknown.
  std::optional<Completeness> completeness;
  std::vector<ResultRecord> records;
};
// Checks the schema and the members compare reads; `source` names the document in messages. A
// record with `expected` and `complete` must hold only expected cases, and all of them when it
// says it is complete.
ResultFile parse_result(const nlohmann::json& document, std::string_view source);
// Reads the file (io::read_file, io::parse_json) and parses it; ResultError names the file.
nlohmann::json read_result_json(const std::string& path);
ResultFile load_result(const std::string& path);

// How complete a record is, for people: "complete: 12 of 12 cases", "PARTIAL: 3 of 12 cases ran,
// 9 missing: KEY, KEY, ... and 4 more", "completeness unknown (a record from before ampbench
// recorded which cases a run expects)".
std::string completeness_text(const std::optional<Completeness>& completeness);
// The first `limit` keys, then how many more: "a, b, c and 9 more".
std::string key_list(const std::vector<std::string>& keys, std::size_t limit = 5);

enum class Direction { lower_is_better, higher_is_better, unjudged };
// By the metric's name, after the last '.': ulps, errors, ratios, mismatches, divergence and
// skipped steps are better lower; fraction_correctly_rounded and eval_accuracy higher; the rest
// (eval_loss) are reported but not judged.
Direction direction_of(std::string_view metric);
// The metrics a reader looks at first, by the name after the last '.': normwise_rel_error,
// max_ulp, fraction_correctly_rounded, eval_loss_error, eval_accuracy, step_ms and vs_fp32.
bool main_metric(std::string_view metric);

struct CompareOptions {
  double tolerance = 0.1;  // relative
  double floor = 1e-12;    // absolute
};

enum class ChangeKind { regression, improvement, new_failure, fixed, added, missing };
std::string_view to_string(ChangeKind kind);

struct Change {
  ChangeKind kind;
  std::string key;
  // Empty for status changes and added or missing records; for a missing metric (a judged metric
  // of the base's record that the new record lacks) its name, `current` empty.
  std::string metric;
  std::optional<double> base;
  std::optional<double> current;
};

// A fingerprint parameter with another value in the new record than in the base's: "fraction_bits
// 24 -> 25". A regression when both files are from the same device (kind and name: a Tensor Core
// that computes differently on the same device), a difference between the devices otherwise. A
// parameter one record has and the other lacks is not a change.
struct FeatureChange {
  std::string key;
  std::string feature;
  std::string base;
  std::string current;
  bool regression = false;
};

struct Comparison {
  std::size_t matched = 0;
  std::vector<Change> changes;
  std::vector<FeatureChange> features;
  std::size_t count(ChangeKind kind) const;
  std::size_t feature_regressions() const;
  // A regression, a new failure, a missing record or metric or a feature regression: what fails
  // the gate.
  bool gate_fails() const;
};

Comparison compare(const ResultFile& base, const ResultFile& current,
                   const CompareOptions& options = {});

// The architecture comparison: for every case both files have, its main metrics side by side
// (an audit's normwise and largest ulp error and fraction correctly rounded; a training run's
// eval-loss error and accuracy per policy; a profile run's step time and ratio to fp32 per
// policy), in the base's order.
struct SideBySide {
  std::string key;
  std::string metric;
  double base = 0;
  double current = 0;
};
std::vector<SideBySide> side_by_side(const ResultFile& base, const ResultFile& current);

}  // namespace ampbench::results
