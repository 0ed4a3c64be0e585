#include "harness/fingerprint/record.hpp"

#include <cmath>
#include <utility>
#include <vector>

namespace ampbench::fingerprint {
namespace {

// Numbers as JSON numbers; the non-finite ones (which JSON lacks) as strings.
nlohmann::json number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

nlohmann::json numbers(const std::vector<double>& xs) {
  nlohmann::json list = nlohmann::json::array();
  for (const double x : xs) list.push_back(number(x));
  return list;
}

}  // namespace

nlohmann::json to_json(const Fingerprint& fp, const numeric::MmaModel& preset,
                       std::span<const Comparison> rows) {
  nlohmann::json doc{
      {"schema", "ampbench.fingerprint/1"},
      {"executor", fp.executor},
      {"input", fp.input.name},
      {"accumulator", fp.accumulator == numeric::MmaAccumulator::fp16 ? "fp16" : "fp32"},
      {"preset", preset.name},
      {"match", all_match(rows)}};
  for (const auto& row : rows) {
    doc["parameters"].push_back({{"parameter", row.parameter},
                                 {"inferred", row.inferred},
                                 {"preset", row.preset},
                                 {"match", row.match}});
  }
  for (const auto& e : fp.evidence) {
    nlohmann::json test{{"parameter", e.parameter},
                        {"test", e.test},
                        {"source", e.source},
                        {"verdict", e.verdict},
                        {"outputs", numbers(e.outputs)}};
    test["probes"] = nlohmann::json::array();
    for (const auto& p : e.probes) {
      test["probes"].push_back({{"c", number(p.c)}, {"a", numbers(p.a)}, {"b", numbers(p.b)}});
    }
    test["hypotheses"] = nlohmann::json::array();
    for (const auto& h : e.hypotheses) {
      test["hypotheses"].push_back({{"name", h.name}, {"expected", numbers(h.expected)}});
    }
    doc["evidence"].push_back(std::move(test));
  }
  return doc;
}

}  // namespace ampbench::fingerprint
