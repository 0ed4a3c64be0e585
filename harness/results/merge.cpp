#include "harness/results/merge.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "harness/results/compare.hpp"
#include "harness/results/record.hpp"
#include "harness/results/suite.hpp"

namespace ampbench::results {
namespace {

// Members the shards agree on are kept; started is the earliest, finished the latest (UTC ISO
// 8601 strings order as times), anything else that differs is "mixed".
nlohmann::json merged_environment(std::span<const ResultDocument> shards) {
  nlohmann::json merged = nlohmann::json::object();
  std::set<std::string> names;
  for (const auto& s : shards) {
    const auto& environment = s.document.value("environment", nlohmann::json::object());
    if (!environment.is_object()) continue;
    for (const auto& [name, value] : environment.items()) names.insert(name);
  }
  for (const auto& name : names) {
    std::vector<nlohmann::json> values;
    for (const auto& s : shards) {
      const auto& environment = s.document.value("environment", nlohmann::json::object());
      values.push_back(environment.is_object() && environment.contains(name) ? environment[name]
                                                                             : nullptr);
    }
    const bool agree = std::all_of(values.begin(), values.end(),
                                   [&](const nlohmann::json& v) { return v == values.front(); });
    const bool all_strings = std::all_of(values.begin(), values.end(),
                                         [](const nlohmann::json& v) { return v.is_string(); });
    if (agree) {
      merged[name] = values.front();
    } else if ((name == "started" || name == "finished") && all_strings) {
      merged[name] = name == "started" ? *std::min_element(values.begin(), values.end())
                                       : *std::max_element(values.begin(), values.end());
    } else {
      merged[name] = "mixed";
    }
  }
  return merged;
}

}  // namespace

Merged merge_shards(std::span<const ResultDocument> shards) {
  if (shards.empty()) throw ResultError("no shard results to merge");
  std::string suite;
  Merged merged;
  std::map<std::size_t, const ResultDocument*> by_index;
  std::map<std::string, std::string> source_of_key;
  // The suite's cases in its order, as the first shard that says names them, and which shard.
  std::vector<std::string> suite_keys;
  const ResultDocument* keys_from = nullptr;
  for (const auto& s : shards) {
    const ResultFile file = parse_result(s.document, s.source);
    if (!s.document.contains("shard") || !s.document["shard"].is_string()) {
      throw ResultError(fmt::format("{}: shard is not a string", s.source));
    }
    const std::string shard_text = s.document["shard"].get<std::string>();
    Shard shard;
    try {
      shard = parse_shard(shard_text);
    } catch (const std::invalid_argument& e) {
      throw ResultError(
          fmt::format("{}: shard \"{}\": {} (merge the shards' own results, not "
                      "a partial merge)",
                      s.source, shard_text, e.what()));
    }
    if (&s == &shards.front()) {
      suite = file.suite;
      merged.shard_count = shard.count;
    }
    if (file.suite != suite) {
      throw ResultError(fmt::format("{}: suite \"{}\", but {} is of suite \"{}\"", s.source,
                                    file.suite, shards.front().source, suite));
    }
    if (shard.count != merged.shard_count) {
      throw ResultError(fmt::format("{}: shard {}, but {} is one of {} shards", s.source,
                                    shard_text, shards.front().source, merged.shard_count));
    }
    if (const auto [it, fresh] = by_index.emplace(shard.index, &s); !fresh) {
      throw ResultError(
          fmt::format("{}: shard {} is also {}", s.source, shard_text, it->second->source));
    }
    for (const auto& record : file.records) {
      if (const auto [it, fresh] = source_of_key.emplace(record.key, s.source); !fresh) {
        throw ResultError(fmt::format("{}: case {} is also in {} (shards of different suites?)",
                                      s.source, record.key, it->second));
      }
    }
    if (!file.completeness) {
      merged.unknown_shards.push_back(s.source);
      continue;
    }
    const Completeness& c = *file.completeness;
    const std::vector<std::string>& keys = shard.count == 1 ? c.expected : c.suite_keys;
    if (keys_from == nullptr) {
      suite_keys = keys;
      keys_from = &s;
    } else if (keys != suite_keys) {
      throw ResultError(fmt::format(
          "{}: its suite's cases differ from those of {} (shards of different versions of the "
          "suite?)",
          s.source, keys_from->source));
    }
    // The shard's cases must be its share of the suite's: index I, I+N, I+2N...
    std::vector<std::string> share;
    for (std::size_t i = shard.index; i < suite_keys.size(); i += shard.count) {
      share.push_back(suite_keys[i]);
    }
    if (share != c.expected) {
      throw ResultError(fmt::format("{}: the cases it expects are not shard {} of its suite's",
                                    s.source, shard_text));
    }
    if (!c.complete) {
      merged.partial_shards.push_back({s.source, shard_text, c.expected.size(), c.missing});
    }
  }

  std::vector<std::size_t> present;
  for (std::size_t i = 0; i < merged.shard_count; ++i) {
    if (by_index.contains(i)) {
      present.push_back(i);
    } else {
      merged.missing_shards.push_back(i);
    }
  }
  nlohmann::json records = nlohmann::json::array();
  // Known when every shard says which cases it expects.
  const bool known = merged.unknown_shards.empty() && !suite_keys.empty();
  if (known) {
    // In the suite's order; and the suite's cases without a record are the missing ones.
    std::map<std::string, const nlohmann::json*> by_key;
    for (const std::size_t i : present) {
      for (const auto& record : by_index[i]->document["records"]) {
        by_key.emplace(record["key"].get<std::string>(), &record);
      }
    }
    for (const auto& key : suite_keys) {
      const auto it = by_key.find(key);
      if (it == by_key.end()) {
        merged.missing_cases.push_back(key);
      } else {
        records.push_back(*it->second);
      }
    }
  } else {
    // Records from before the shards named the suite's cases: shard I holds I, I+N, I+2N...
    for (std::size_t round = 0;; ++round) {
      bool any = false;
      for (const std::size_t i : present) {
        const auto& shard_records = by_index[i]->document["records"];
        if (round < shard_records.size()) {
          records.push_back(shard_records[round]);
          any = true;
        }
      }
      if (!any) break;
    }
  }
  nlohmann::json merged_from = nlohmann::json::array();
  for (const std::size_t i : present) {
    const auto& d = by_index[i]->document;
    merged_from.push_back({{"source", by_index[i]->source},
                           {"shard", d["shard"]},
                           {"records", d["records"].size()},
                           {"environment", d.value("environment", nlohmann::json::object())}});
  }
  std::vector<std::string> indices;
  for (const std::size_t i : present) indices.push_back(std::to_string(i));
  const std::string shard = merged.missing_shards.empty()
                                ? std::string("0/1")
                                : fmt::format("{}/{}", fmt::join(indices, ","), merged.shard_count);
  merged.document = {{"schema", std::string(kResultSchema)},
                     {"suite", suite},
                     {"shard", shard},
                     {"environment", merged_environment(shards)},
                     {"merged_from", merged_from},
                     {"records", records}};
  if (known) {
    merged.document["expected"] = {{"cases", suite_keys.size()}, {"keys", suite_keys}};
    merged.document["complete"] = merged.complete();
    if (!merged.complete()) merged.document["missing"] = merged.missing_cases;
  }
  // The run's settings, when every shard has the same.
  for (const char* member : {"backend", "tolerance"}) {
    const auto& first = shards.front().document;
    if (!first.contains(member)) continue;
    const bool agree = std::all_of(shards.begin(), shards.end(), [&](const ResultDocument& s) {
      return s.document.contains(member) && s.document[member] == first[member];
    });
    merged.document[member] = agree ? first[member] : nlohmann::json("mixed");
  }
  // What a backend could not run is the same list in every shard of a run: kept once.
  nlohmann::json not_run = nlohmann::json::array();
  std::set<std::string> listed;
  for (const std::size_t i : present) {
    const auto& d = by_index[i]->document;
    if (!d.contains("not_run") || !d["not_run"].is_array()) continue;
    for (const auto& entry : d["not_run"]) {
      if (entry.is_object() && entry.contains("key") && listed.insert(entry["key"].dump()).second) {
        not_run.push_back(entry);
      }
    }
  }
  if (!not_run.empty()) merged.document["not_run"] = not_run;
  return merged;
}

}  // namespace ampbench::results
