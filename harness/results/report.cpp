#include "harness/results/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "harness/results/compare.hpp"
#include "harness/results/svg.hpp"

namespace ampbench::results {
namespace {

const nlohmann::json& records_of(const ResultDocument& r) {
  return r.document.at("records");
}

}  // namespace

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (const char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string text_of(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string("-");
}

std::vector<std::string> breaches_of(const nlohmann::json& record) {
  std::vector<std::string> breaches;
  if (record.contains("breaches") && record["breaches"].is_array()) {
    for (const auto& b : record["breaches"]) {
      if (b.is_string()) breaches.push_back(b.get<std::string>());
    }
  }
  return breaches;
}

double seconds_of(const nlohmann::json& record) {
  return record.contains("seconds") && record["seconds"].is_number()
             ? record["seconds"].get<double>()
             : 0.0;
}

// The metrics a reader looks at first: an audit's normwise error, largest ulp error and fraction
// correctly rounded; a training run's eval-loss error and accuracy per policy; a profile run's
// median step time per policy.
std::vector<FingerprintRow> fingerprint_rows(const nlohmann::json& record) {
  std::vector<FingerprintRow> rows;
  if (text_of(record, "kind") != "fingerprint" || !record.contains("detail")) return rows;
  const auto& detail = record["detail"];
  if (!detail.is_object() || !detail.contains("parameters") || !detail["parameters"].is_array()) {
    return rows;
  }
  for (const auto& p : detail["parameters"]) {
    rows.push_back({text_of(p, "parameter"), text_of(p, "inferred"), text_of(p, "preset"),
                    p.contains("match") && p["match"] == true});
  }
  return rows;
}

namespace {

// A share of a recipe's loss error, "+52%"; "-" for what is not a number.
std::string share_text(const nlohmann::json& removed) {
  return removed.is_number() ? fmt::format("{:+.0f}%", 100 * removed.get<double>()) : "-";
}

// An error as the tables print it: 3 significant digits, "-" when it is not a number.
std::string error_text(const nlohmann::json& value) {
  return value.is_number() ? fmt::format("{:.3g}", value.get<double>()) : "-";
}

const nlohmann::json& member_or_null(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

}  // namespace

std::vector<SensitivityTable> sensitivity_tables(const nlohmann::json& record) {
  std::vector<SensitivityTable> tables;
  const auto& rankings = member_or_null(member_or_null(record, "detail"), "sensitivity");
  if (text_of(record, "kind") != "train" || !rankings.is_array()) return tables;
  // A record of both backends ranks on each: its runs are named RUN@BACKEND, as `train` prints
  // them.
  const bool both = text_of(member_or_null(record, "detail"), "backend") == "all";
  for (const auto& r : rankings) {
    const std::string backend = both ? text_of(r, "backend") : "";
    const auto run_name = [&](const nlohmann::json& j) {
      return backend.empty() ? text_of(j, "run") : text_of(j, "run") + "@" + backend;
    };
    SensitivityTable t{text_of(r, "recipe"),
                       run_name(r),
                       backend,
                       "",
                       error_text(member_or_null(r, "mean_loss_error")),
                       {}};
    const auto& seeds = member_or_null(r, "seeds");
    const bool several = seeds.is_array() && seeds.size() > 1;
    if (several) {
      for (const auto& s : seeds) {
        if (!t.seeds.empty()) t.seeds += ", ";
        t.seeds += s.dump();
      }
    }
    const auto& layers = member_or_null(r, "layers");
    for (const auto& l : layers.is_array() ? layers : nlohmann::json::array()) {
      SensitivityRow row{text_of(l, "parameter"),
                         run_name(l),
                         share_text(member_or_null(l, "removed")),
                         "",
                         error_text(member_or_null(l, "mean_loss_error")),
                         error_text(member_or_null(l, "eval_loss_error"))};
      const auto& by_seed = member_or_null(l, "removed_by_seed");
      if (several && by_seed.is_array()) {
        for (const auto& s : by_seed) {
          if (!row.at_each_seed.empty()) row.at_each_seed += ' ';
          row.at_each_seed += share_text(s);
        }
      }
      t.rows.push_back(std::move(row));
    }
    tables.push_back(std::move(t));
  }
  return tables;
}

std::string sensitivity_caption(const SensitivityTable& t) {
  const bool several = !t.seeds.empty();
  return fmt::format(
      "{}{}: layers kept in bf16 one at a time, ranked by the {}share of the recipe's loss error "
      "each removes (the mean over the steps of the loss error; {} alone: {}{})",
      t.recipe, t.backend.empty() ? "" : " on " + t.backend,
      several ? "mean over the seeds of the " : "", t.run, t.mean_loss_error,
      several ? fmt::format(", the mean over seeds {}", t.seeds) : std::string());
}

std::string main_metrics(const nlohmann::json& record) {
  if (text_of(record, "kind") == "fingerprint") {
    const auto rows = fingerprint_rows(record);
    if (rows.empty()) return "";
    const auto matching = std::count_if(rows.begin(), rows.end(),
                                        [](const FingerprintRow& row) { return row.match; });
    return fmt::format("{} of {} parameters match {}", matching, rows.size(),
                       text_of(record["detail"], "preset"));
  }
  if (!record.contains("metrics") || !record["metrics"].is_object()) return "";
  const auto& m = record["metrics"];
  std::string text;
  const auto add = [&](const std::string& name, const std::string& value) {
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", name, value);
  };
  if (text_of(record, "kind") == "audit") {
    if (m.contains("normwise_rel_error"))
      add("normwise", fmt::format("{:.3g}", m["normwise_rel_error"].get<double>()));
    if (m.contains("max_ulp")) add("max ulp", fmt::format("{:g}", m["max_ulp"].get<double>()));
    if (m.contains("fraction_correctly_rounded")) {
      add("CR", fmt::format("{:.1f}%", 100 * m["fraction_correctly_rounded"].get<double>()));
    }
    return text;
  }
  if (text_of(record, "kind") == "recipe") {
    for (const char* gemm : {"fprop", "dgrad", "wgrad"}) {
      const std::string g(gemm);
      if (!m.contains(g + ".total_error")) continue;
      add(g, fmt::format("{:.3g} (quant {:.3g}, accum {:.3g})", m[g + ".total_error"].get<double>(),
                         m.value(g + ".quantization_error", 0.0),
                         m.value(g + ".accumulation_error", 0.0)));
    }
    return text;
  }
  for (const auto& [name, value] : m.items()) {
    const auto dot = name.rfind('.');
    if (dot == std::string::npos || !value.is_number()) continue;
    const std::string metric = name.substr(dot + 1);
    if (metric == "eval_loss_error") add(name, fmt::format("{:.3g}", value.get<double>()));
    if (metric == "eval_accuracy") add(name, fmt::format("{:.3f}", value.get<double>()));
    if (metric == "step_ms") add(name, fmt::format("{:.3g} ms", value.get<double>()));
  }
  return text;
}

std::size_t failures_of(const ResultDocument& r) {
  std::size_t failed = 0;
  for (const auto& record : records_of(r)) failed += text_of(record, "status") != "pass";
  return failed;
}

std::optional<Completeness> completeness_of(const ResultDocument& r) {
  return parse_result(r.document, r.source).completeness;
}

ResultDocument load_result_document(const std::string& path) {
  ResultDocument r{path, read_result_json(path)};
  parse_result(r.document, path);  // the schema and the members, named in its message
  return r;
}

std::string markdown_report(std::span<const ResultDocument> results) {
  std::string out;
  for (const auto& r : results) {
    const auto& env =
        r.document.contains("environment") ? r.document["environment"] : nlohmann::json::object();
    const auto completeness = completeness_of(r);
    const bool partial = completeness && !completeness->complete;
    out += fmt::format("## Suite {} (shard {}){} — {}\n\n", text_of(r.document, "suite"),
                       text_of(r.document, "shard"), partial ? " — PARTIAL RUN" : "", r.source);
    out += fmt::format("ampbench {} ({}), {}, {}; {} to {}\n\n", text_of(env, "ampbench_version"),
                       text_of(env, "git_revision"), text_of(env, "compiler"), text_of(env, "cpu"),
                       text_of(env, "started"), text_of(env, "finished"));
    if (!completeness || partial) {
      out += fmt::format("{}{}{}\n\n", partial ? "**" : "",
                         markdown_cell(completeness_text(completeness)), partial ? "**" : "");
    }
    out += "| case | kind | status | main metrics | breaches |\n|---|---|---|---|---|\n";
    for (const auto& record : records_of(r)) {
      std::string breaches;
      for (const auto& b : breaches_of(record)) breaches += (breaches.empty() ? "" : "; ") + b;
      out += fmt::format("| {} | {} | {} | {} | {} |\n", markdown_cell(text_of(record, "key")),
                         text_of(record, "kind"),
                         text_of(record, "status") == "pass" ? "PASS" : "**FAIL**",
                         markdown_cell(main_metrics(record)), markdown_cell(breaches));
    }
    out += fmt::format("\n{} case(s), {} failed{}.\n\n", records_of(r).size(), failures_of(r),
                       partial ? fmt::format(", {} not run (the run stopped before them)",
                                             completeness->missing.size())
                               : "");
    for (const auto& record : records_of(r)) {
      const auto rows = fingerprint_rows(record);
      if (rows.empty()) continue;
      out += fmt::format("### Fingerprint {} ({})\n\n", markdown_cell(text_of(record, "key")),
                         markdown_cell(text_of(record["detail"], "executor")));
      out += "| parameter | inferred | preset | match |\n|---|---|---|---|\n";
      for (const auto& row : rows) {
        out += fmt::format("| {} | {} | {} | {} |\n", row.parameter, markdown_cell(row.inferred),
                           markdown_cell(row.preset), row.match ? "yes" : "**NO**");
      }
      out += "\n";
    }
    for (const auto& record : records_of(r)) {
      for (const SensitivityTable& t : sensitivity_tables(record)) {
        const bool several = !t.seeds.empty();
        out +=
            fmt::format("### Sensitivity {}: {}\n\n{}.\n\n", markdown_cell(text_of(record, "key")),
                        markdown_cell(t.backend.empty() ? t.recipe : t.recipe + " on " + t.backend),
                        markdown_cell(sensitivity_caption(t)));
        out += several ? "| layer | run | removed | at each seed | mean loss error | eval loss "
                         "error |\n|---|---|---|---|---|---|\n"
                       : "| layer | run | removed | mean loss error | eval loss error "
                         "|\n|---|---|---|---|---|\n";
        for (const SensitivityRow& row : t.rows) {
          out += fmt::format("| {} | {} | {} |{} {} | {} |\n", markdown_cell(row.layer),
                             markdown_cell(row.run), row.removed,
                             several ? " " + row.at_each_seed + " |" : "", row.mean_loss_error,
                             row.eval_loss_error);
        }
        out += "\n";
      }
    }
  }
  return out;
}

std::string junit_report(std::span<const ResultDocument> results) {
  // The cases a partial record lacks: errors, so that a stopped run never reads as green.
  std::vector<std::vector<std::string>> missing;
  std::size_t tests = 0, failures = 0, errors = 0;
  for (const auto& r : results) {
    const auto completeness = completeness_of(r);
    missing.push_back(completeness ? completeness->missing : std::vector<std::string>{});
    tests += records_of(r).size() + missing.back().size();
    failures += failures_of(r);
    errors += missing.back().size();
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites tests=\"{}\" failures=\"{}\" errors=\"{}\">\n", tests, failures,
                     errors);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ResultDocument& r = results[i];
    double time = 0;
    for (const auto& record : records_of(r)) time += seconds_of(record);
    out += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n",
        svg::escape(text_of(r.document, "suite")), records_of(r).size() + missing[i].size(),
        failures_of(r), missing[i].size(), time);
    for (const auto& record : records_of(r)) {
      out += fmt::format("    <testcase classname=\"ampbench.{}\" name=\"{}\" time=\"{:.3f}\"",
                         svg::escape(text_of(record, "kind")), svg::escape(text_of(record, "key")),
                         seconds_of(record));
      if (text_of(record, "status") == "pass") {
        out += "/>\n";
        continue;
      }
      std::string breaches;
      for (const auto& b : breaches_of(record)) breaches += (breaches.empty() ? "" : "\n") + b;
      out += fmt::format(
          ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
          svg::escape(breaches_of(record).empty() ? "failed" : breaches_of(record).front()),
          svg::escape(breaches));
    }
    for (const auto& key : missing[i]) {
      const std::string kind = key.substr(0, key.find('/'));
      out += fmt::format(
          "    <testcase classname=\"ampbench.{}\" name=\"{}\" time=\"0\">\n      <error "
          "message=\"not run: the run stopped before this case (a partial record)\"/>\n    "
          "</testcase>\n",
          svg::escape(kind), svg::escape(key));
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace ampbench::results
