// The device comparison page and its Markdown (device_comparison.hpp; docs/comparing-devices.md):
// the tables are built once as text and rendered twice; the page adds the charts, drawn with the
// HTML report's SVG code, a device keeping its colour on every chart.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "harness/profile/hardware_metrics.hpp"
#include "harness/results/compare.hpp"
#include "harness/results/device_comparison.hpp"
#include "harness/results/html_parts.hpp"
#include "harness/results/svg.hpp"

namespace ampbench::results {
namespace {

using html::member;
using html::number_of;

constexpr const char* kAbsent = "not recorded";

struct TextTable {
  std::vector<std::string> header;
  struct Row {
    std::vector<std::string> cells;
    std::string css;  // the row's class on the page: pass, fail, absent; disagree
  };
  std::vector<Row> rows;
};

std::string html_of(const TextTable& table, const char* css) {
  std::string out = fmt::format("<table class=\"{}\"><thead><tr>", css);
  for (const auto& h : table.header) out += fmt::format("<th>{}</th>", svg::escape(h));
  out += "</tr></thead><tbody>\n";
  for (const auto& row : table.rows) {
    out += fmt::format("<tr class=\"{}\">", row.css);
    for (std::size_t i = 0; i < row.cells.size(); ++i) {
      out += fmt::format("<td class=\"{}\">{}</td>",
                         i == 0   ? "key"
                         : i == 1 ? "device"
                                  : "num",
                         svg::escape(row.cells[i]));
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string markdown_of(const TextTable& table) {
  std::string out = "|";
  for (const auto& h : table.header) out += fmt::format(" {} |", markdown_cell(h));
  out += "\n|";
  for (std::size_t i = 0; i < table.header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& row : table.rows) {
    out += "|";
    for (const auto& c : row.cells) out += fmt::format(" {} |", markdown_cell(c));
    out += "\n";
  }
  return out + "\n";
}

std::string number_text(double value, const char* format) {
  return std::isfinite(value) ? fmt::format(fmt::runtime(format), value) : std::string(kAbsent);
}

std::string metric_text(const std::optional<CaseOnDevice>& on, const std::string& metric,
                        const char* format) {
  if (!on) return "-";
  const auto it = on->metrics.find(metric);
  return it == on->metrics.end() ? std::string(kAbsent)
                                 : fmt::format(fmt::runtime(format), it->second);
}

template <typename Optional>
std::string optional_text(const Optional& value) {
  if (!value) return "unknown";
  return fmt::format("{}", *value);
}

// ---- the devices ------------------------------------------------------------------------------

TextTable device_table(const DeviceComparison& c) {
  TextTable table;
  table.header.push_back("");
  for (const auto& d : c.devices) table.header.push_back(d.label);
  const auto row = [&](const char* name, auto&& value_of) {
    TextTable::Row r{{name}, ""};
    for (const auto& d : c.devices) r.cells.push_back(value_of(d));
    table.rows.push_back(std::move(r));
  };
  const auto env = [](const DeviceColumn& d, const char* key) {
    return text_of(member(*d.document, "environment"), key);
  };
  row("file", [](const DeviceColumn& d) { return d.source; });
  row("kind", [](const DeviceColumn& d) {
    return d.device.kind == "cpu-emulation" ? std::string("CPU emulation") : d.device.kind;
  });
  row("name", [](const DeviceColumn& d) { return d.device.name; });
  row("compute capability",
      [](const DeviceColumn& d) { return optional_text(d.device.compute_capability); });
  row("SMs", [](const DeviceColumn& d) { return optional_text(d.device.sms); });
  row("memory", [](const DeviceColumn& d) {
    return d.device.memory_bytes
               ? fmt::format("{:.1f} GiB", static_cast<double>(*d.device.memory_bytes) /
                                               (1024.0 * 1024.0 * 1024.0))
               : std::string("unknown");
  });
  row("SM clock (MHz)", [](const DeviceColumn& d) { return optional_text(d.device.sm_clock_mhz); });
  row("memory clock (MHz)",
      [](const DeviceColumn& d) { return optional_text(d.device.memory_clock_mhz); });
  row("driver (CUDA version)",
      [](const DeviceColumn& d) { return optional_text(d.device.driver); });
  row("CUDA runtime", [](const DeviceColumn& d) { return optional_text(d.device.cuda_runtime); });
  row("cuBLAS", [](const DeviceColumn& d) { return optional_text(d.device.cublas); });
  row("cuDNN", [](const DeviceColumn& d) { return optional_text(d.device.cudnn); });
  row("NVIDIA_TF32_OVERRIDE",
      [](const DeviceColumn& d) { return optional_text(d.device.tf32_override); });
  row("Tensor Core models (--mma)", [](const DeviceColumn& d) {
    return d.device.mma.empty() ? std::string("none")
                                : fmt::format("{}", fmt::join(d.device.mma, ", "));
  });
  row("device recorded", [](const DeviceColumn& d) {
    return d.device.derived ? std::string("no: derived from the record's text (an older record)")
                            : std::string("yes");
  });
  row("host CPU", [&](const DeviceColumn& d) { return env(d, "cpu"); });
  row("backend", [](const DeviceColumn& d) { return text_of(*d.document, "backend"); });
  row("ampbench", [&](const DeviceColumn& d) {
    return fmt::format("{} ({})", env(d, "ampbench_version"), env(d, "git_revision"));
  });
  row("started", [&](const DeviceColumn& d) { return env(d, "started"); });
  row("cases", [](const DeviceColumn& d) {
    const ResultDocument r{d.source, *d.document};
    return fmt::format("{} here; the record: {}, {} failed; {}", d.cases,
                       (*d.document)["records"].size(), failures_of(r),
                       completeness_text(completeness_of(r)));
  });
  return table;
}

// ---- the rows of a case -----------------------------------------------------------------------

std::string status_of(const std::optional<CaseOnDevice>& on) {
  return !on ? std::string("not in this record") : on->pass ? "PASS" : "FAIL";
}

std::string row_class(const CaseAcross& c, const std::optional<CaseOnDevice>& on) {
  const std::string status = !on ? "absent" : on->pass ? "pass" : "fail";
  return c.disagreements.empty() ? status : status + " disagree";
}

std::string disagreement_text(const CaseAcross& c) {
  return c.disagreements.empty() ? std::string("-")
                                 : fmt::format("{}", fmt::join(c.disagreements, ", "));
}

// The first device's value of a metric of the case, the reference of the ratios.
std::optional<double> first_value(const CaseAcross& c, const std::string& metric) {
  for (const auto& on : c.on) {
    if (!on) continue;
    const auto it = on->metrics.find(metric);
    if (it != on->metrics.end()) return it->second;
    return std::nullopt;
  }
  return std::nullopt;
}

std::string ratio_text(const CaseAcross& c, const std::optional<CaseOnDevice>& on,
                       const std::string& metric) {
  const auto base = first_value(c, metric);
  if (!on || !base || *base == 0) return "-";
  const auto it = on->metrics.find(metric);
  return it == on->metrics.end() ? std::string("-") : fmt::format("{:.3g}", it->second / *base);
}

TextTable accuracy_table(const DeviceComparison& c) {
  TextTable table{{"case", "device", "status", "normwise error", "max ulp", "correctly rounded",
                   "normwise / first device's", "disagrees in"},
                  {}};
  for (const auto& k : c.cases) {
    if (k.kind != "audit") continue;
    for (std::size_t d = 0; d < c.devices.size(); ++d) {
      const auto& on = k.on[d];
      table.rows.push_back(
          {{k.key, c.devices[d].label, status_of(on),
            metric_text(on, "normwise_rel_error", "{:.3g}"), metric_text(on, "max_ulp", "{:g}"),
            on && on->metrics.contains("fraction_correctly_rounded")
                ? fmt::format("{:.1f}%", 100 * on->metrics.at("fraction_correctly_rounded"))
                : metric_text(on, "fraction_correctly_rounded", "{}"),
            ratio_text(k, on, "normwise_rel_error"), disagreement_text(k)},
           row_class(k, on)});
    }
  }
  return table;
}

// Per fingerprint case and parameter, each device's inferred value beside the preset's (from the
// case's detail, ampbench.fingerprint/1); the rows of a parameter in which the devices differ are
// marked.
TextTable fingerprint_table(const DeviceComparison& c) {
  TextTable table{
      {"case · parameter", "device", "status", "inferred", "preset", "matches the preset"}, {}};
  for (const auto& k : c.cases) {
    if (k.kind != "fingerprint") continue;
    std::vector<std::string> parameters;
    std::map<std::string, std::string> preset;
    for (const auto& on : k.on) {
      if (!on || on->detail == nullptr) continue;
      for (const auto& row : fingerprint_rows({{"kind", "fingerprint"}, {"detail", *on->detail}})) {
        if (preset.emplace(row.parameter, row.preset).second) parameters.push_back(row.parameter);
      }
    }
    for (const auto& parameter : parameters) {
      const bool differ = std::find(k.disagreements.begin(), k.disagreements.end(), parameter) !=
                          k.disagreements.end();
      for (std::size_t d = 0; d < c.devices.size(); ++d) {
        const auto& on = k.on[d];
        std::string inferred = kAbsent;
        std::string matches = "-";
        if (on && on->features.contains(parameter)) {
          inferred = on->features.at(parameter);
          matches = inferred == preset[parameter] ? "yes" : "NO";
        }
        const std::string status = !on ? "absent" : on->pass ? "pass" : "fail";
        table.rows.push_back({{fmt::format("{} · {}", k.key, parameter), c.devices[d].label,
                               status_of(on), inferred, preset[parameter], matches},
                              differ ? status + " disagree" : status});
      }
    }
  }
  return table;
}

// The policies of a training or profile case, from its metrics "P.NAME", in first-seen order.
std::vector<std::string> policies_of(const CaseAcross& k, const char* suffix) {
  std::vector<std::string> policies;
  for (const auto& on : k.on) {
    if (!on) continue;
    for (const auto& [metric, value] : on->metrics) {
      if (!metric.ends_with(suffix)) continue;
      const std::string policy = metric.substr(0, metric.size() - std::string_view(suffix).size());
      if (policy != "reference" &&
          std::find(policies.begin(), policies.end(), policy) == policies.end()) {
        policies.push_back(policy);
      }
    }
  }
  return policies;
}

TextTable training_table(const DeviceComparison& c) {
  TextTable table{
      {"case · policy", "device", "status", "eval loss error", "max loss error", "eval accuracy",
       "skipped steps", "eval loss error / first device's", "disagrees in"},
      {}};
  for (const auto& k : c.cases) {
    if (k.kind != "train") continue;
    for (const auto& policy : policies_of(k, ".eval_loss_error")) {
      for (std::size_t d = 0; d < c.devices.size(); ++d) {
        const auto& on = k.on[d];
        table.rows.push_back(
            {{fmt::format("{} · {}", k.key, policy), c.devices[d].label, status_of(on),
              metric_text(on, policy + ".eval_loss_error", "{:.3g}"),
              metric_text(on, policy + ".max_loss_error", "{:.3g}"),
              metric_text(on, policy + ".eval_accuracy", "{:.4f}"),
              metric_text(on, policy + ".skipped_steps", "{:g}"),
              ratio_text(k, on, policy + ".eval_loss_error"), disagreement_text(k)},
             row_class(k, on)});
      }
    }
  }
  return table;
}

// A profile run of a policy on a device, from the case's detail; null when it has none.
const nlohmann::json* profile_run(const std::optional<CaseOnDevice>& on,
                                  const std::string& policy) {
  if (!on || on->detail == nullptr || !member(*on->detail, "runs").is_array()) return nullptr;
  for (const auto& run : (*on->detail)["runs"]) {
    if (text_of(run, "policy") == policy) return &run;
  }
  return nullptr;
}

// The hardware counters of a run over its outermost recorded ranges, weighted by their GPU time:
// the Tensor Core pipe's active share and the DRAM throughput (GB/s). NaN when not recorded.
std::pair<double, double> counters_of(const nlohmann::json* run) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (run == nullptr) return {nan, nan};
  const auto& ranges = member(member(*run, "hardware_metrics"), "ranges");
  if (!ranges.is_array() || ranges.empty()) return {nan, nan};
  std::size_t depth = std::numeric_limits<std::size_t>::max();
  for (const auto& r : ranges) {
    depth = std::min<std::size_t>(depth, std::ranges::count(text_of(r, "path"), '/'));
  }
  double time = 0, active = 0, active_time = 0, bytes = 0;
  for (const auto& r : ranges) {
    if (static_cast<std::size_t>(std::ranges::count(text_of(r, "path"), '/')) != depth) continue;
    const double ns = number_of(r, "gpu_time_ns");
    if (!std::isfinite(ns)) continue;
    time += ns;
    bytes += std::isfinite(number_of(r, "dram_bytes")) ? number_of(r, "dram_bytes") : 0;
    if (const double share = number_of(r, "tensor_active_share"); std::isfinite(share)) {
      active += share * ns;
      active_time += ns;
    }
  }
  return {active_time > 0 ? active / active_time : nan,
          time > 0 ? bytes / time : nan};  // bytes per ns: GB/s
}

TextTable profile_table(const DeviceComparison& c) {
  TextTable table{
      {"case · policy", "device", "median step (ms)", "vs fp32", "launch share", "cast share",
       "Tensor Core share", "idle share", "peak memory (MiB)", "Tensor pipe active", "DRAM (GB/s)"},
      {}};
  for (const auto& k : c.cases) {
    if (k.kind != "profile") continue;
    for (const auto& policy : policies_of(k, ".step_ms")) {
      for (std::size_t d = 0; d < c.devices.size(); ++d) {
        const auto& on = k.on[d];
        const nlohmann::json* run = profile_run(on, policy);
        const nlohmann::json none;
        const auto& shares = member(member(run ? *run : none, "attribution"), "shares");
        const auto share = [&](const char* name) {
          return number_text(100 * number_of(shares, name), "{:.1f}%");
        };
        const auto [tensor_active, dram] = counters_of(run);
        table.rows.push_back(
            {{fmt::format("{} · {}", k.key, policy), c.devices[d].label,
              metric_text(on, policy + ".step_ms", "{:.4g}"),
              metric_text(on, policy + ".vs_fp32", "{:.3g}"), share("launch_overhead"),
              share("cast"), share("tensor_core"), share("idle"),
              number_text(number_of(run ? *run : none, "peak_device_bytes") / (1024.0 * 1024.0),
                          "{:.1f}"),
              std::isfinite(tensor_active) ? profile::share_percent(tensor_active)
                                           : std::string(kAbsent),
              number_text(dram, "{:.1f}")},
             on ? "pass" : "absent"});
      }
    }
  }
  return table;
}

// ---- the charts --------------------------------------------------------------------------------

// A device's short name for a chart's categories: its place and name.
std::string short_name(const DeviceComparison& c, std::size_t d) {
  const Device& device = c.devices[d].device;
  std::string name =
      device.kind == "cpu-emulation"
          ? (device.mma.empty() ? std::string("CPU")
                                : fmt::format("CPU mma={}", fmt::join(device.mma, ",")))
          : device.name;
  if (name.starts_with("NVIDIA ")) name = name.substr(7);
  return fmt::format("#{} {}", d + 1, name);
}

// Per op, the normwise error of each case, a bar per device.
std::string op_comparison_charts(const DeviceComparison& c) {
  std::vector<std::string> ops;
  std::map<std::string, svg::BarChart> charts;
  for (const auto& k : c.cases) {
    if (k.kind != "audit") continue;
    const auto first = k.key.find('/') + 1;  // "audit/OP/..."
    const std::string op = k.key.substr(first, k.key.find('/', first) - first);
    if (!charts.contains(op)) {
      ops.push_back(op);
      svg::BarChart chart{.title = fmt::format("{}: normwise error per case, a bar per device", op),
                          .x_label = "case (its key after the op)",
                          .y = {"normwise relative error (log)", 10}};
      for (std::size_t d = 0; d < c.devices.size(); ++d) {
        chart.series.push_back(c.devices[d].label);
        chart.colours.push_back(svg::colour(d));
      }
      chart.values.resize(c.devices.size());
      charts.emplace(op, std::move(chart));
    }
    svg::BarChart& chart = charts.at(op);
    chart.categories.push_back(k.key.substr(first + op.size() + 1));
    for (std::size_t d = 0; d < c.devices.size(); ++d) {
      const auto& on = k.on[d];
      const auto it = on ? on->metrics.find("normwise_rel_error")
                         : std::map<std::string, double>::const_iterator{};
      chart.values[d].push_back(
          on && it != on->metrics.end() ? it->second : std::numeric_limits<double>::quiet_NaN());
    }
  }
  std::string out;
  for (const auto& op : ops) out += svg::bar_chart(charts.at(op));
  return out;
}

// Per training case and policy, the loss error per step, a line per device.
std::string training_charts(const DeviceComparison& c, const CaseAcross& k) {
  std::string out;
  for (const auto& policy : policies_of(k, ".eval_loss_error")) {
    svg::LineChart chart{.title = fmt::format("{}: loss error per step, a line per device", policy),
                         .x = {"step", 0},
                         .y = {"relative loss error (log)", 10}};
    for (std::size_t d = 0; d < c.devices.size(); ++d) {
      const auto& on = k.on[d];
      if (!on || on->detail == nullptr || !member(*on->detail, "runs").is_array()) {
        chart.notes.push_back(fmt::format("{}: no per-step record", c.devices[d].label));
        continue;
      }
      svg::Series series{.name = c.devices[d].label, .colour = svg::colour(d)};
      for (const auto& run : (*on->detail)["runs"]) {
        if (text_of(run, "policy") != policy || !member(run, "steps").is_array()) continue;
        for (const auto& step : run["steps"]) {
          if (step.contains("loss_rel_error")) {
            series.points.emplace_back(number_of(step, "step"), number_of(step, "loss_rel_error"));
          }
        }
      }
      chart.series.push_back(std::move(series));
    }
    out += svg::line_chart(chart);
  }
  return out;
}

// Per profile case: the median step by phase per device and policy, and the ratio to fp32.
std::string profile_charts(const DeviceComparison& c, const CaseAcross& k) {
  std::vector<std::pair<std::string, const nlohmann::json*>> runs;
  const auto policies = policies_of(k, ".step_ms");
  for (const auto& policy : policies) {
    for (std::size_t d = 0; d < c.devices.size(); ++d) {
      if (const auto* run = profile_run(k.on[d], policy)) {
        runs.emplace_back(fmt::format("{} · {}", policy, short_name(c, d)), run);
      }
    }
  }
  // The case is the section's heading: the titles stay short enough to read.
  std::string out = html::phase_chart("Median step time by phase, per policy and device", runs);
  svg::BarChart ratio{.title = "Step time over fp32's, a bar per device",
                      .x_label = "policy",
                      .categories = policies,
                      .y = {"median step / fp32's", 0}};
  for (std::size_t d = 0; d < c.devices.size(); ++d) {
    ratio.series.push_back(c.devices[d].label);
    ratio.colours.push_back(svg::colour(d));
    ratio.values.emplace_back();
    for (const auto& policy : policies) {
      const auto& on = k.on[d];
      const auto it = on ? on->metrics.find(policy + ".vs_fp32")
                         : std::map<std::string, double>::const_iterator{};
      ratio.values.back().push_back(
          on && it != on->metrics.end() ? it->second : std::numeric_limits<double>::quiet_NaN());
    }
  }
  return out + svg::bar_chart(ratio);
}

// A heading and the charts of each case of one kind ("train", "profile").
std::string charts_per_case(const DeviceComparison& c, std::string_view kind,
                            std::string_view heading,
                            std::string (*charts)(const DeviceComparison&, const CaseAcross&)) {
  std::string out;
  for (const auto& k : c.cases) {
    if (k.kind != kind) continue;
    out += fmt::format("<h3>{}: {}</h3>\n<div class=\"charts\">{}</div>\n", heading,
                       svg::escape(k.key), charts(c, k));
  }
  return out;
}

std::string summary_text(const DeviceComparison& c) {
  return fmt::format(
      "{} case(s) on {} devices; {} where the devices disagree beyond the tolerance ({:g} "
      "relative, floor {:g}; compare's rule against the first device that has the case)",
      c.cases.size(), c.devices.size(), c.disagreeing(), c.tolerance, c.floor);
}

}  // namespace

std::string html_comparison(const DeviceComparison& c) {
  std::string out = html::page_start(fmt::format("ampbench device comparison · {}", c.suite));
  out += fmt::format("<p class=\"summary\">{}.</p>\n", svg::escape(summary_text(c)));
  out +=
      "<p class=\"explain\">Each device keeps its colour on every chart; a case's ratios are "
      "against the first device that has it. A value a record does not carry is said, not "
      "drawn.</p>\n";
  out += "<h2>Devices</h2>\n" + html_of(device_table(c), "devices");
  if (c.disagreeing() > 0) {
    out += "<h2>Where the devices disagree</h2>\n<ul class=\"failures\">\n";
    for (const auto& k : c.cases) {
      if (k.disagreements.empty()) continue;
      out += fmt::format("<li><b>{}</b>: {}</li>\n", svg::escape(k.key),
                         svg::escape(disagreement_text(k)));
    }
    out += "</ul>\n";
  }
  const TextTable accuracy = accuracy_table(c);
  if (!accuracy.rows.empty()) {
    // The charts first: a glance over every op before the long table.
    out +=
        fmt::format("<h2>Accuracy</h2>\n<div class=\"charts\">{}</div>\n", op_comparison_charts(c));
    out += html_of(accuracy, "comparison accuracy");
  }
  const TextTable training = training_table(c);
  if (!training.rows.empty()) {
    out += "<h2>Training</h2>\n" + html_of(training, "comparison training");
    out += charts_per_case(c, "train", "Training", training_charts);
  }
  const TextTable profiles = profile_table(c);
  if (!profiles.rows.empty()) {
    out += "<h2>Profiles</h2>\n" + html_of(profiles, "comparison profiles");
    out +=
        "<p class=\"explain\">On the CPU emulation the times are the emulator's, not a GPU's; "
        "shares, peak memory and counters come from the GPU's attribution and CUPTI range "
        "profiler (docs/profiling.md).</p>\n";
    out += charts_per_case(c, "profile", "Profile", profile_charts);
  }
  const TextTable fingerprints = fingerprint_table(c);
  if (!fingerprints.rows.empty()) {
    out += "<h2>Fingerprint</h2>\n";
    out +=
        "<p class=\"explain\">The Tensor Core parameters each device's feature tests inferred "
        "(docs/fingerprint.md), against the preset each was compared with (a device's own "
        "architecture's for the case's formats); the rows of a parameter in "
        "which the devices differ are marked.</p>\n";
    out += html_of(fingerprints, "comparison fingerprint");
  }
  return out + std::string(html::kPageEnd);
}

std::string markdown_comparison(const DeviceComparison& c) {
  std::string out =
      fmt::format("# ampbench device comparison · {}\n\n{}.\n\n", c.suite, summary_text(c));
  out += "## Devices\n\n" + markdown_of(device_table(c));
  if (c.disagreeing() > 0) {
    out += "## Where the devices disagree\n\n";
    for (const auto& k : c.cases) {
      if (!k.disagreements.empty()) out += fmt::format("- {}: {}\n", k.key, disagreement_text(k));
    }
    out += "\n";
  }
  for (const auto& [title, table] :
       {std::pair{"Accuracy", accuracy_table(c)}, std::pair{"Training", training_table(c)},
        std::pair{"Profiles", profile_table(c)}, std::pair{"Fingerprint", fingerprint_table(c)}}) {
    if (!table.rows.empty()) out += fmt::format("## {}\n\n{}", title, markdown_of(table));
  }
  return out;
}

}  // namespace ampbench::results
