// The HTML report: one page with nothing to fetch (inline CSS and SVG, no script), so that it opens
// from a CI artifact or a mail attachment as it is. The charts are drawn from the records' details
// (ampbench.audit/1 cases and ampbench.train/1 runs); what a record does not carry is said, never
// made up.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "harness/results/html_parts.hpp"
#include "harness/results/report.hpp"
#include "harness/results/svg.hpp"
#include "harness/train/profile_record.hpp"

namespace ampbench::results {
namespace html {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

constexpr const char* kStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; color: #1a1a1a; margin: 24px auto; max-width: 1300px;
       padding: 0 16px; }
h1 { font-size: 24px; margin: 0 0 8px; }
h2 { font-size: 20px; margin: 32px 0 4px; border-bottom: 2px solid #ccc; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 24px 0 4px; }
.source, .env, .explain { color: #555; margin: 2px 0; }
.summary { font-size: 16px; margin: 10px 0; }
.badge { display: inline-block; padding: 1px 10px; border-radius: 4px; color: #fff;
         font-weight: 600; margin-right: 8px; }
.badge.pass { background: #1b7837; } .badge.fail { background: #b2182b; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 10px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.key { white-space: nowrap; }
ul.failures { color: #b2182b; margin: 4px 0; }
.partial { color: #b2182b; font-weight: 700; }
tr.fail td { background: #fde0dc; } tr.disagree td.device { border-left: 4px solid #e08214; }
td.disagree { color: #8a3b00; font-weight: 600; } tr.fail td.status { color: #b2182b; font-weight: 700; }
td.status { color: #1b7837; font-weight: 600; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 12px; }
svg.chart { width: 100%; height: auto; background: #fff; border: 1px solid #e3e3e3; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
svg text.title { font-size: 14px; font-weight: 600; fill: #111; }
svg text.axis, svg text.legend { font-size: 12px; }
svg text.note { font-style: italic; fill: #8a3b00; }
svg .grid { stroke: #e8e8e8; } svg .frame { fill: none; stroke: #999; }
svg .series { fill: none; stroke-linejoin: round; }
svg .cross { stroke-width: 2.5; fill: none; }
)";

}  // namespace

std::string page_start(std::string_view title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
      "<style>{}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
      svg::escape(title), kStyle, svg::escape(title));
}

double number_of(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : kNaN;
}

const nlohmann::json& member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json none;
  return j.is_object() && j.contains(key) ? j[key] : none;
}

std::string phase_chart(const std::string& title,
                        const std::vector<std::pair<std::string, const nlohmann::json*>>& runs) {
  using train::kProfilePhases;
  if (runs.empty()) return "";
  svg::BarChart chart{.title = title, .y = {"milliseconds", 0}, .stacked = true};
  for (const char* phase : kProfilePhases) {
    chart.series.push_back(phase);
    chart.colours.push_back(svg::segment_colour(chart.series.size() - 1));
  }
  chart.series.push_back("rest");
  chart.colours.push_back(svg::segment_colour(chart.series.size() - 1));
  chart.values.assign(chart.series.size(), {});
  for (const auto& [label, run] : runs) {
    chart.categories.push_back(label);
    const auto& median = member(member(*run, "step_ms"), "median");
    const double step_ms = median.is_number() ? median.get<double>() : 0.0;
    double covered = 0;
    for (std::size_t i = 0; i < std::size(kProfilePhases); ++i) {
      const auto& share = member(member(*run, "phase_share"), kProfilePhases[i]);
      const double fraction = share.is_number() ? share.get<double>() : 0.0;
      covered += fraction;
      chart.values[i].push_back(step_ms * fraction);
    }
    chart.values.back().push_back(step_ms * std::max(0.0, 1.0 - covered));
  }
  return svg::bar_chart(chart);
}

}  // namespace html

namespace {

using html::kNaN;
using html::member;
using html::number_of;
using svg::escape;

// Every policy (with its Tensor Core model or distribution when not the default) keeps one
// colour across the charts of the page.
class Colours {
 public:
  std::string operator()(const std::string& name) {
    if (name == "reference") return svg::kReferenceColour;
    auto it = std::find(names_.begin(), names_.end(), name);
    if (it == names_.end()) it = names_.insert(names_.end(), name);
    return svg::colour(static_cast<std::size_t>(it - names_.begin()));
  }

 private:
  std::vector<std::string> names_;
};

// An audit case's series name: its policy, and its Tensor Core model and input distribution when
// it has them (cases that differ only in those are different series).
std::string variant_of(const nlohmann::json& detail) {
  std::string name = text_of(detail, "policy");
  if (detail.contains("mma")) name += " mma=" + text_of(detail, "mma");
  if (text_of(detail, "dist") != "normal") name += " " + text_of(detail, "dist");
  return name;
}

// The size an op's error grows with: the shape's last dimension, which is the inner dimension K
// of gemm and bmm, the length of a reduction (dot, sum, mean) and the row length of a row-wise op;
// NaN for shapes that are not a plain AxBx... (convolutions), and for a hand-edited record's "8x".
double problem_size(const std::string& shape) {
  const std::string last = shape.substr(shape.rfind('x') + 1);  // no 'x': npos + 1 == 0, all of it
  if (last.empty() || shape.find_first_not_of("0123456789x") != std::string::npos) return kNaN;
  const double n = std::strtod(last.c_str(), nullptr);  // digits only; too many are inf
  return std::isfinite(n) ? n : kNaN;
}

// "1", "2", "4", ..., "512", "2^10" ..., ">2^32": a bucket's largest ulp error.
std::string bucket_label(const nlohmann::json& bucket) {
  const double hi = number_of(bucket, "max");
  if (std::isnan(hi))
    return fmt::format(">2^{}", std::lround(std::log2(number_of(bucket, "min") - 1)));
  if (hi < 1024) return fmt::format("{:g}", hi);
  return fmt::format("2^{}", std::lround(std::log2(hi)));
}

struct AuditRecord {
  std::string variant;
  const nlohmann::json* detail;
};

// One op's charts: the ulp-error histogram per shape (policies side by side), the normwise error
// against the problem size, and the largest error over its a-priori bound.
std::string op_charts(const std::string& op, const std::vector<AuditRecord>& records,
                      Colours& colours) {
  std::string out;
  std::vector<std::string> shapes;
  for (const auto& r : records) {
    const std::string shape = text_of(*r.detail, "shape");
    if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) shapes.push_back(shape);
  }
  for (const auto& shape : shapes) {
    svg::BarChart chart{.title = fmt::format("{} {}: ulp error of the outputs", op, shape),
                        .x_label = "ulp error (a bucket's largest)",
                        .y = {"outputs (log)", 10}};
    std::size_t buckets = 5;  // at least 0 to 8 ulp, so that a correctly rounded op reads as such
    for (const auto& r : records) {
      const auto& histogram = member(*r.detail, "ulp_histogram");
      if (text_of(*r.detail, "shape") != shape || !histogram.is_array()) continue;
      std::vector<double> counts;
      for (const auto& bucket : histogram) counts.push_back(number_of(bucket, "count"));
      for (std::size_t b = 0; b < counts.size(); ++b) {
        if (counts[b] > 0) buckets = std::max(buckets, b + 1);
      }
      if (chart.categories.size() < histogram.size()) {
        chart.categories.clear();
        for (const auto& bucket : histogram) chart.categories.push_back(bucket_label(bucket));
      }
      chart.series.push_back(r.variant);
      chart.colours.push_back(colours(r.variant));
      chart.values.push_back(std::move(counts));
    }
    if (chart.series.empty()) continue;
    buckets = std::min(buckets, chart.categories.size());
    chart.categories.resize(buckets);
    for (auto& v : chart.values) v.resize(buckets, 0.0);
    out += svg::bar_chart(chart);
  }

  const svg::Axis sizes{"problem size (the shape's last dimension)", 2};
  svg::LineChart size{.title = fmt::format("{}: normwise error against problem size", op),
                      .x = sizes,
                      .y = {"normwise relative error", 10}};
  svg::LineChart bound{.title = fmt::format("{}: largest error over its a-priori bound", op),
                       .x = sizes,
                       .y = {"max |error_i| / bound_i", 10}};
  // A point per case at its size, on the policy's line.
  const auto add_point = [&](svg::LineChart& chart, const AuditRecord& r, double n,
                             const char* metric) {
    const auto& value = member(*r.detail, metric);
    if (value.is_null()) return;  // no a-priori bound, or a metric the case has no value for
    auto it = std::find_if(chart.series.begin(), chart.series.end(),
                           [&](const svg::Series& s) { return s.name == r.variant; });
    if (it == chart.series.end()) {
      it = chart.series.insert(chart.series.end(),
                               svg::Series{.name = r.variant, .colour = colours(r.variant)});
    }
    it->points.emplace_back(n, value.is_number() ? value.get<double>() : kNaN);
  };
  std::size_t unsized = 0;
  for (const auto& r : records) {
    const double n = problem_size(text_of(*r.detail, "shape"));
    if (std::isnan(n)) {
      ++unsized;
      continue;
    }
    add_point(size, r, n, "normwise_rel_error");
    add_point(bound, r, n, "bound_ratio");
  }
  for (auto* chart : {&size, &bound}) {
    for (auto& s : chart->series) std::sort(s.points.begin(), s.points.end());
  }
  if (!size.series.empty()) out += svg::line_chart(size);
  if (!bound.series.empty()) {
    bound.rules.push_back({"the bound: error = bound", 1.0});
    out += svg::line_chart(bound);
  }
  std::string html = fmt::format("<div class=\"charts\">{}</div>\n", out);
  if (unsized > 0) {
    html += fmt::format(
        "<p class=\"explain\">{} case(s) of {} are not in the problem-size charts: their shape is "
        "not one size.</p>\n",
        unsized, escape(op));
  }
  return html;
}

// A recipe run's scaled tensors per step: each layer's x, w and dy (as the first GEMM it enters
// quantizes it), by its per-tensor scale where the recipe has one, else by its amax. Nothing for
// a policy's run.
std::string recipe_chart(const std::string& model, const nlohmann::json& run) {
  if (!member(run, "recipe_arch").is_string() || !member(run, "steps").is_array()) return {};
  const std::string recipe = text_of(run, "policy");
  bool scaled = false;
  for (const auto& step : run["steps"]) {
    if (!member(step, "scaled").is_array()) continue;
    for (const auto& t : step["scaled"]) scaled = scaled || member(t, "scale").is_number();
  }
  const char* what = scaled ? "scale" : "amax";
  const std::string arch = text_of(run, "recipe_arch");
  svg::LineChart chart{.title = fmt::format("{}: {} per tensor, {} (GEMMs {})", model, what, recipe,
                                            arch == "exact" ? "multiplied exactly" : "on " + arch),
                       .x = {"step", 0},
                       .y = {fmt::format("{} (log)", what), 2}};
  std::vector<std::string> names;
  for (const auto& step : run["steps"]) {
    if (!member(step, "scaled").is_array()) continue;
    std::vector<std::string> seen;
    for (const auto& t : step["scaled"]) {
      const std::string name = text_of(t, "parameter") + " " + text_of(t, "role");
      if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
      seen.push_back(name);
      if (!member(t, what).is_number()) continue;
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) {
        it = names.insert(names.end(), name);
        chart.series.push_back(
            {.name = name, .colour = svg::colour(static_cast<std::size_t>(it - names.begin()))});
      }
      chart.series[static_cast<std::size_t>(it - names.begin())].points.emplace_back(
          number_of(step, "step"), number_of(t, what));
    }
  }
  return chart.series.empty() ? std::string() : svg::line_chart(chart);
}

// A training run's charts: the loss per step of every policy against the reference, the loss
// error per step, the loss scale with the skipped steps marked, and each recipe run's scales.
std::string train_charts(const nlohmann::json& detail, Colours& colours) {
  const std::string model = text_of(member(detail, "config"), "model");
  const svg::Axis steps{"step", 0};
  svg::LineChart loss{
      .title = fmt::format("{}: training loss per step", model), .x = steps, .y = {"loss", 0}};
  svg::LineChart error{.title = fmt::format("{}: loss error against the reference", model),
                       .x = steps,
                       .y = {"relative loss error (log)", 10}};
  svg::LineChart scale{.title = fmt::format("{}: loss scale, skipped steps marked", model),
                       .x = steps,
                       .y = {"loss scale (log)", 2}};
  std::vector<const nlohmann::json*> runs;
  if (member(detail, "reference").is_object()) runs.push_back(&detail["reference"]);
  if (member(detail, "runs").is_array()) {
    for (const auto& run : detail["runs"]) runs.push_back(&run);
  }
  std::size_t unplaced_skips = 0;
  for (const auto* run : runs) {
    const std::string policy = text_of(*run, "policy");
    const std::string c = colours(policy);
    svg::Series l{.name = policy, .colour = c}, e = l, s = l;
    svg::Series skipped{
        .name = policy + ": skipped step", .colour = c, .line = false, .crosses = true};
    if (!member(*run, "steps").is_array()) continue;
    for (const auto& step : (*run)["steps"]) {
      const double n = number_of(step, "step");
      l.points.emplace_back(n, number_of(step, "loss"));
      if (step.contains("loss_rel_error"))
        e.points.emplace_back(n, number_of(step, "loss_rel_error"));
      if (step.contains("scale")) s.points.emplace_back(n, number_of(step, "scale"));
      if (member(step, "skipped").is_boolean() && step["skipped"].get<bool>()) {
        if (step.contains("scale")) {
          skipped.points.emplace_back(n, number_of(step, "scale"));
        } else {
          ++unplaced_skips;
        }
      }
    }
    if (policy == "reference") l.width = 5;  // drawn first, it shows around the policies on it
    loss.series.push_back(std::move(l));
    if (!e.points.empty()) error.series.push_back(std::move(e));
    if (!s.points.empty()) scale.series.push_back(std::move(s));
    if (!skipped.points.empty()) scale.series.push_back(std::move(skipped));
  }
  if (!scale.series.empty() && std::none_of(scale.series.begin(), scale.series.end(),
                                            [](const svg::Series& s) { return s.crosses; })) {
    scale.notes.push_back("no step was skipped");
  }
  std::string out = svg::line_chart(loss);
  if (!error.series.empty()) out += svg::line_chart(error);
  if (!scale.series.empty()) out += svg::line_chart(scale);
  for (const auto* run : runs) out += recipe_chart(model, *run);
  std::string html = fmt::format("<div class=\"charts\">{}</div>\n", out);
  if (scale.series.empty()) {
    html +=
        "<p class=\"explain\">No policy of this run uses a loss scaler: no scale to draw.</p>\n";
  }
  if (unplaced_skips > 0) {
    html += fmt::format(
        "<p class=\"explain\">{} skipped step(s) of policies without a scaler are not drawn.</p>\n",
        unplaced_skips);
  }
  return html;
}

// A training record's --sensitivity rankings (sensitivity_tables): a table per recipe under its
// caption; over several seeds with each seed's share beside the mean.
std::string sensitivity_html(const nlohmann::json& record) {
  std::string out;
  for (const SensitivityTable& t : sensitivity_tables(record)) {
    const bool several = !t.seeds.empty();
    out += fmt::format(
        "<p class=\"explain\">{}.</p>\n<table class=\"sensitivity\"><thead><tr><th>layer</th>"
        "<th>run</th><th>removed</th>{}<th>mean loss error</th><th>eval loss error</th></tr>"
        "</thead><tbody>\n",
        escape(sensitivity_caption(t)), several ? "<th>removed at each seed</th>" : "");
    for (const SensitivityRow& row : t.rows) {
      out += fmt::format(
          "<tr><td class=\"key\">{}</td><td>{}</td><td class=\"num\">{}</td>{}<td "
          "class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
          escape(row.layer), escape(row.run), row.removed,
          several ? fmt::format("<td class=\"num\">{}</td>", row.at_each_seed) : "",
          row.mean_loss_error, row.eval_loss_error);
    }
    out += "</tbody></table>\n";
  }
  return out;
}

// The time of the result as stacked bars: per policy, its audit cases' seconds by op; per training
// run one bar, by model (a run's record holds the time of all its policies together).
std::string time_chart(const nlohmann::json& records) {
  std::vector<std::string> categories;
  std::map<std::string, std::map<std::string, double>> seconds;  // [segment][category]
  std::map<std::string, double> segment_total;
  for (const auto& record : records) {
    const auto& detail = member(record, "detail");
    std::string category, segment;
    if (text_of(record, "kind") == "audit" && detail.is_object()) {
      category = text_of(detail, "policy");
      segment = text_of(detail, "op");
    } else if (text_of(record, "kind") == "train" && detail.is_object()) {
      category = text_of(member(detail, "config"), "model") + " run";
      segment = "training runs";
    } else if (text_of(record, "kind") == "profile" && detail.is_object()) {
      category = text_of(detail, "model") + " profile";
      segment = "profile runs";
    } else {
      category = "cases without a record";
      segment = "failed before a record";
    }
    if (std::find(categories.begin(), categories.end(), category) == categories.end()) {
      categories.push_back(category);
    }
    seconds[segment][category] += seconds_of(record);
    segment_total[segment] += seconds_of(record);
  }
  // The legend holds the slowest segments; the rest are summed as one.
  constexpr std::size_t kSegments = 9;
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [segment, total] : segment_total) order.emplace_back(-total, segment);
  std::sort(order.begin(), order.end());
  svg::BarChart chart{.title = "Time per policy (stacked by op) and per training run",
                      .categories = categories,
                      .y = {"seconds", 0},
                      .stacked = true};
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::string& segment = order[i].second;
    const bool other = i + 1 >= kSegments && order.size() > kSegments;
    if (!other || i + 1 == kSegments) {
      chart.series.push_back(other ? "other ops" : segment);
      chart.colours.push_back(svg::segment_colour(chart.series.size() - 1));
      chart.values.emplace_back(categories.size(), 0.0);
    }
    for (std::size_t c = 0; c < categories.size(); ++c) {
      const auto& by_category = seconds[segment];
      const auto it = by_category.find(categories[c]);
      if (it != by_category.end()) chart.values.back()[c] += it->second;
    }
  }
  return svg::bar_chart(chart);
}

// A profile run's step as stacked bars per policy (html::phase_chart). A record from before a
// phase existed ("loss" came later) shows none of it.
std::string profile_chart(const nlohmann::json& detail) {
  std::vector<std::pair<std::string, const nlohmann::json*>> runs;
  if (member(detail, "runs").is_array()) {
    for (const auto& run : detail["runs"]) runs.emplace_back(text_of(run, "policy"), &run);
  }
  return html::phase_chart("Median step time per policy, by phase", runs);
}

std::string environment_line(const nlohmann::json& env) {
  std::string line;
  for (const auto& [label, key] :
       std::initializer_list<std::pair<const char*, const char*>>{{"ampbench", "ampbench_version"},
                                                                  {"revision", "git_revision"},
                                                                  {"compiler", "compiler"},
                                                                  {"build", "build_type"},
                                                                  {"CUDA", "cuda"},
                                                                  {"CPU", "cpu"},
                                                                  {"host", "hostname"},
                                                                  {"started", "started"},
                                                                  {"finished", "finished"}}) {
    const auto& value = member(env, key);
    if (value.is_null()) continue;
    line += fmt::format("{}<b>{}</b> {}", line.empty() ? "" : " · ", label,
                        escape(value.is_string() ? value.get<std::string>() : value.dump()));
  }
  return line;
}

std::string records_table(const nlohmann::json& records) {
  std::string out =
      "<table class=\"records\"><thead><tr><th>case</th><th>kind</th><th>status</th>"
      "<th>main metrics</th><th>seconds</th><th>breaches</th></tr></thead><tbody>\n";
  for (const auto& record : records) {
    const bool pass = text_of(record, "status") == "pass";
    std::string breaches;
    for (const auto& b : breaches_of(record)) {
      breaches += (breaches.empty() ? "" : "<br>") + escape(b);
    }
    out += fmt::format(
        "<tr class=\"{}\"><td class=\"key\">{}</td><td>{}</td><td "
        "class=\"status\">{}</td><td>{}</td>"
        "<td class=\"num\">{:.2f}</td><td>{}</td></tr>\n",
        pass ? "pass" : "fail", escape(text_of(record, "key")), escape(text_of(record, "kind")),
        pass ? "PASS" : "FAIL", escape(main_metrics(record)), seconds_of(record), breaches);
  }
  return out + "</tbody></table>\n";
}

std::string result_section(const ResultDocument& r, Colours& colours) {
  const auto& records = r.document.at("records");
  const std::size_t failed = failures_of(r);
  double seconds = 0;
  for (const auto& record : records) seconds += seconds_of(record);
  const auto completeness = completeness_of(r);
  const bool partial = completeness && !completeness->complete;
  std::string out = fmt::format(
      "<section class=\"result\">\n<h2>Suite {} · shard {}{}</h2>\n<p class=\"source\">{}</p>\n"
      "<p class=\"env\">{}</p>\n",
      escape(text_of(r.document, "suite")), escape(text_of(r.document, "shard")),
      partial ? " · PARTIAL RUN" : "", escape(r.source),
      environment_line(member(r.document, "environment")));
  out += fmt::format(
      "<p class=\"summary\"><span class=\"badge {}\">{}</span>{} case(s), {} passed, {} failed, "
      "{:.1f} s</p>\n",
      failed || partial ? "fail" : "pass",
      failed    ? "FAIL"
      : partial ? "PARTIAL"
                : "PASS",
      records.size(), records.size() - failed, failed, seconds);
  if (partial || !completeness) {
    out += fmt::format("<p class=\"{}\">{}</p>\n", partial ? "summary partial" : "explain",
                       escape(completeness_text(completeness)));
  }
  if (failed > 0) {  // what a reader looks for first, before a long table
    out += "<ul class=\"failures\">\n";
    for (const auto& record : records) {
      if (text_of(record, "status") == "pass") continue;
      std::string breaches;
      for (const auto& b : breaches_of(record)) breaches += (breaches.empty() ? "" : "; ") + b;
      out += fmt::format("<li><b>{}</b>: {}</li>\n", escape(text_of(record, "key")),
                         escape(breaches.empty() ? "failed" : breaches));
    }
    out += "</ul>\n";
  }
  out += "<h3>Cases</h3>\n" + records_table(records);

  for (const auto& record : records) {
    const auto& detail = member(record, "detail");
    if (text_of(record, "kind") != "train" || !detail.is_object()) continue;
    out += fmt::format("<h3>Training: {}</h3>\n", escape(text_of(record, "key")));
    out += train_charts(detail, colours);
    out += sensitivity_html(record);
  }
  for (const auto& record : records) {
    const auto& detail = member(record, "detail");
    if (text_of(record, "kind") != "profile" || !detail.is_object()) continue;
    out += fmt::format("<h3>Profile: {}</h3>\n", escape(text_of(record, "key")));
    out += fmt::format(
        "<p class=\"explain\">Host timers around each phase of the step on the {} backend: "
        "the times are the emulator's, not a GPU's; the ratios between policies say what "
        "emulating them costs.</p>\n<div class=\"charts\">{}</div>\n",
        escape(text_of(detail, "backend")), profile_chart(detail));
  }
  for (const auto& record : records) {
    const auto rows = fingerprint_rows(record);
    if (rows.empty()) continue;
    out += fmt::format(
        "<h3>Fingerprint: {}</h3>\n<p class=\"explain\">{}: the Tensor Core parameters the "
        "feature tests inferred, against the preset {}.</p>\n<table class=\"fingerprint\">"
        "<thead><tr><th>parameter</th><th>inferred</th><th>preset</th><th>match</th></tr>"
        "</thead><tbody>\n",
        escape(text_of(record, "key")), escape(text_of(record["detail"], "executor")),
        escape(text_of(record["detail"], "preset")));
    for (const auto& row : rows) {
      out += fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                         row.match ? "pass" : "fail", escape(row.parameter), escape(row.inferred),
                         escape(row.preset), row.match ? "yes" : "NO");
    }
    out += "</tbody></table>\n";
  }
  std::vector<std::string> ops;
  std::map<std::string, std::vector<AuditRecord>> by_op;
  for (const auto& record : records) {
    const auto& detail = member(record, "detail");
    if (text_of(record, "kind") != "audit" || !detail.is_object()) continue;
    const std::string op = text_of(detail, "op");
    if (!by_op.contains(op)) ops.push_back(op);
    by_op[op].push_back({variant_of(detail), &detail});
  }
  for (const auto& op : ops) {
    out += fmt::format("<h3>Audit: {}</h3>\n", escape(op));
    out += op_charts(op, by_op[op], colours);
  }
  out += "<h3>Time</h3>\n";
  out += records.empty() ? std::string("<p class=\"explain\">No cases: no time to draw.</p>\n")
                         : fmt::format("<div class=\"charts\">{}</div>\n", time_chart(records));
  return out + "</section>\n";
}

}  // namespace

std::string html_report(std::span<const ResultDocument> results) {
  std::string title = "ampbench report";
  for (const auto& r : results) title += " · " + text_of(r.document, "suite");
  std::string out = html::page_start(title);
  out +=
      "<p class=\"explain\">Histograms count outputs by their distance in ulps from the "
      "correctly rounded result (0: correctly rounded). Error charts are log-log; a value a log "
      "axis cannot show is named under its chart. Colours stay with a policy across the "
      "page; the reference is black.</p>\n";
  Colours colours;
  for (const auto& r : results) out += result_section(r, colours);
  return out + std::string(html::kPageEnd);
}

}  // namespace ampbench::results
