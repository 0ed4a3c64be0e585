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
};
struct ResultFile {
  std::string suite;
  // What ran the cases: the environment's gpu when it names a device, otherwise its cpu; empty
  // when the record does not say (a hand-written one).
  std::string device;
  std::optional<double> tolerance;  // the suite's, when the record carries it
  std::vector<ResultRecord> records;
};
// Checks the schema and the members compare reads; `source` names the document in messages.
ResultFile parse_result(const nlohmann::json& document, std::string_view source);
ResultFile load_result(const std::string& path);

enum class Direction { lower_is_better, higher_is_better, unjudged };
// By the metric's name, after the last '.': ulps, errors, ratios, mismatches, divergence and
// skipped steps are better lower; fraction_correctly_rounded and eval_accuracy higher; the rest
// (eval_loss) are reported but not judged.
Direction direction_of(std::string_view metric);

struct CompareOptions {
  double tolerance = 0.1;  // relative
  double floor = 1e-12;    // absolute
};

enum class ChangeKind { regression, improvement, new_failure, fixed, added, missing };
std::string_view to_string(ChangeKind kind);

struct Change {
  ChangeKind kind;
  std::string key;
  std::string metric;  // empty for status changes and added or missing records
  std::optional<double> base;
  std::optional<double> current;
};

struct Comparison {
  std::size_t matched = 0;
  std::vector<Change> changes;
  std::size_t count(ChangeKind kind) const;
  // A regression, a new failure or a missing record: what fails the gate.
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
