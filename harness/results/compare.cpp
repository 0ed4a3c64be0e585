#include "harness/results/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "harness/io/files.hpp"

namespace ampbench::results {
namespace {

std::string_view last_part(std::string_view metric) {
  const auto dot = metric.rfind('.');
  return dot == std::string_view::npos ? metric : metric.substr(dot + 1);
}

const ResultRecord* find(const ResultFile& file, const std::string& key) {
  for (const auto& r : file.records) {
    if (r.key == key) return &r;
  }
  return nullptr;
}

}  // namespace

ResultFile parse_result(const nlohmann::json& document, std::string_view source) {
  const auto bad = [&](const std::string& what) {
    return ResultError(fmt::format("{}: not an {} record: {}", source, "ampbench.result/1", what));
  };
  if (!document.is_object()) throw bad("the document is not a JSON object");
  if (!document.contains("schema") || document["schema"] != "ampbench.result/1") {
    throw bad(document.contains("schema") ? fmt::format("schema is {}", document["schema"].dump())
                                          : "no schema member");
  }
  if (!document.contains("records") || !document["records"].is_array()) {
    throw bad("records is not an array");
  }
  ResultFile file;
  if (document.contains("suite") && document["suite"].is_string())
    file.suite = document["suite"].get<std::string>();
  if (document.contains("tolerance")) {
    const auto& tolerance = document["tolerance"];
    if (!tolerance.is_number() || !(tolerance.get<double>() >= 0)) {
      throw bad("tolerance is not a number >= 0");
    }
    file.tolerance = tolerance.get<double>();
  }
  file.device = device_of(document, source);
  const bool has_complete = document.contains("complete");
  if (has_complete != document.contains("expected")) {
    throw bad(has_complete ? "complete without expected" : "expected without complete");
  }
  if (has_complete) {
    if (!document["complete"].is_boolean()) throw bad("complete is not true or false");
    const auto& expected = document["expected"];
    const auto strings = [&](const char* name, std::vector<std::string>& out) {
      if (!expected.contains(name)) return false;
      const auto& list = expected[name];
      if (!list.is_array()) throw bad(fmt::format("expected.{} is not an array", name));
      std::set<std::string> seen;
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (!list[i].is_string()) {
          throw bad(fmt::format("expected.{}[{}] is not a string", name, i));
        }
        if (!seen.insert(list[i].get<std::string>()).second) {
          throw bad(fmt::format("expected.{}[{}] repeats {}", name, i, list[i].get<std::string>()));
        }
        out.push_back(list[i].get<std::string>());
      }
      return true;
    };
    Completeness c;
    c.complete = document["complete"].get<bool>();
    if (!expected.is_object() || !strings("keys", c.expected)) {
      throw bad("expected is not an object with the array keys");
    }
    strings("suite_keys", c.suite_keys);
    file.completeness = std::move(c);
  }
  std::set<std::string> keys;
  const auto& records = document["records"];
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    const auto member = [&](const char* name) { return fmt::format("records[{}].{}", i, name); };
    if (!r.is_object() || !r.contains("key") || !r["key"].is_string()) {
      throw bad(member("key") + " is not a string");
    }
    ResultRecord record;
    record.key = r["key"].get<std::string>();
    if (!keys.insert(record.key).second) throw bad(member("key") + " repeats " + record.key);
    if (!r.contains("status") || (r["status"] != "pass" && r["status"] != "fail")) {
      throw bad(member("status") + " is not \"pass\" or \"fail\"");
    }
    record.pass = r["status"] == "pass";
    if (!r.contains("metrics") || !r["metrics"].is_object()) {
      throw bad(member("metrics") + " is not an object");
    }
    for (const auto& [name, value] : r["metrics"].items()) {
      if (!value.is_number())
        throw bad(fmt::format("{}.{} is not a number", member("metrics"), name));
      record.metrics[name] = value.get<double>();
    }
    if (r.contains("features")) {
      if (!r["features"].is_object()) throw bad(member("features") + " is not an object");
      for (const auto& [name, value] : r["features"].items()) {
        if (!value.is_string()) {
          throw bad(fmt::format("{}.{} is not a string", member("features"), name));
        }
        record.features[name] = value.get<std::string>();
      }
    }
    file.records.push_back(std::move(record));
  }
  if (file.completeness) {
    Completeness& c = *file.completeness;
    const std::set<std::string> expected(c.expected.begin(), c.expected.end());
    for (std::size_t i = 0; i < file.records.size(); ++i) {
      if (!expected.contains(file.records[i].key)) {
        throw bad(fmt::format("records[{}].key {} is not one of the expected cases", i,
                              file.records[i].key));
      }
    }
    for (const auto& key : c.expected) {
      if (!keys.contains(key)) c.missing.push_back(key);
    }
    if (c.complete && !c.missing.empty()) {
      throw bad(fmt::format("complete is true, but {} expected case(s) have no record: {}",
                            c.missing.size(), key_list(c.missing)));
    }
  }
  return file;
}

nlohmann::json read_result_json(const std::string& path) {
  try {
    return io::parse_json(io::read_file(path), path);
  } catch (const io::FileError& e) {
    throw ResultError(e.what());
  }
}

ResultFile load_result(const std::string& path) {
  return parse_result(read_result_json(path), path);
}

std::string key_list(const std::vector<std::string>& keys, std::size_t limit) {
  std::string text;
  for (std::size_t i = 0; i < keys.size() && i < limit; ++i) {
    text += fmt::format("{}{}", i == 0 ? "" : ", ", keys[i]);
  }
  if (keys.size() > limit) text += fmt::format(" and {} more", keys.size() - limit);
  return text;
}

std::string completeness_text(const std::optional<Completeness>& completeness) {
  if (!completeness) {
    return "completeness unknown (a record from before ampbench recorded which cases a run "
           "expects)";
  }
  const Completeness& c = *completeness;
  const std::size_t ran = c.expected.size() - c.missing.size();
  if (c.complete) return fmt::format("complete: {} of {} cases", ran, c.expected.size());
  return fmt::format("PARTIAL: {} of {} cases ran, {} missing: {}", ran, c.expected.size(),
                     c.missing.size(), key_list(c.missing));
}

Direction direction_of(std::string_view metric) {
  const std::string_view name = last_part(metric);
  if (name == "fraction_correctly_rounded" || name == "eval_accuracy") {
    return Direction::higher_is_better;
  }
  if (name.ends_with("_ulp") || name.ends_with("_error") || name == "bound_ratio" ||
      name == "mismatches" || name == "weight_divergence" || name == "skipped_steps") {
    return Direction::lower_is_better;
  }
  return Direction::unjudged;
}

std::string_view to_string(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::regression: return "regression";
    case ChangeKind::improvement: return "improvement";
    case ChangeKind::new_failure: return "new failure";
    case ChangeKind::fixed: return "fixed";
    case ChangeKind::added: return "added";
    case ChangeKind::missing: return "missing";
  }
  return "?";
}

std::size_t Comparison::count(ChangeKind kind) const {
  return static_cast<std::size_t>(std::count_if(changes.begin(), changes.end(),
                                                [&](const Change& c) { return c.kind == kind; }));
}

std::size_t Comparison::feature_regressions() const {
  return static_cast<std::size_t>(std::count_if(
      features.begin(), features.end(), [](const FeatureChange& f) { return f.regression; }));
}

bool Comparison::gate_fails() const {
  return count(ChangeKind::regression) + count(ChangeKind::new_failure) +
             count(ChangeKind::missing) + feature_regressions() >
         0;
}

Comparison compare(const ResultFile& base, const ResultFile& current,
                   const CompareOptions& options) {
  Comparison result;
  const bool same_device =
      base.device.kind == current.device.kind && base.device.name == current.device.name;
  for (const auto& b : base.records) {
    const ResultRecord* n = find(current, b.key);
    if (n == nullptr) {
      result.changes.push_back({ChangeKind::missing, b.key, "", std::nullopt, std::nullopt});
      continue;
    }
    ++result.matched;
    if (b.pass != n->pass) {
      result.changes.push_back({b.pass ? ChangeKind::new_failure : ChangeKind::fixed, b.key, "",
                                std::nullopt, std::nullopt});
    }
    for (const auto& [metric, base_value] : b.metrics) {
      const auto it = n->metrics.find(metric);
      const Direction direction = direction_of(metric);
      if (direction == Direction::unjudged) continue;
      if (it == n->metrics.end()) {
        // A judged metric the case no longer gives (a training run on the device without a recipe
        // the device now refuses): as missing as a case would be.
        result.changes.push_back({ChangeKind::missing, b.key, metric, base_value, std::nullopt});
        continue;
      }
      const double worse_by = direction == Direction::lower_is_better ? it->second - base_value
                                                                      : base_value - it->second;
      const double threshold = std::max(options.tolerance * std::abs(base_value), options.floor);
      if (worse_by > threshold) {
        result.changes.push_back({ChangeKind::regression, b.key, metric, base_value, it->second});
      } else if (-worse_by > threshold) {
        result.changes.push_back({ChangeKind::improvement, b.key, metric, base_value, it->second});
      }
    }
    for (const auto& [feature, base_value] : b.features) {
      const auto it = n->features.find(feature);
      if (it != n->features.end() && it->second != base_value) {
        result.features.push_back({b.key, feature, base_value, it->second, same_device});
      }
    }
  }
  for (const auto& n : current.records) {
    if (find(base, n.key) == nullptr) {
      result.changes.push_back({ChangeKind::added, n.key, "", std::nullopt, std::nullopt});
    }
  }
  return result;
}

bool main_metric(std::string_view metric) {
  static constexpr std::string_view kMain[] = {"normwise_rel_error",
                                               "max_ulp",
                                               "fraction_correctly_rounded",
                                               "eval_loss_error",
                                               "eval_accuracy",
                                               "step_ms",
                                               "vs_fp32"};
  return std::find(std::begin(kMain), std::end(kMain), last_part(metric)) != std::end(kMain);
}

std::vector<SideBySide> side_by_side(const ResultFile& base, const ResultFile& current) {
  std::vector<SideBySide> rows;
  for (const auto& b : base.records) {
    const ResultRecord* n = find(current, b.key);
    if (n == nullptr) continue;
    for (const auto& [metric, base_value] : b.metrics) {
      if (!main_metric(metric)) continue;
      const auto it = n->metrics.find(metric);
      if (it != n->metrics.end()) rows.push_back({b.key, metric, base_value, it->second});
    }
  }
  return rows;
}

}  // namespace ampbench::results
