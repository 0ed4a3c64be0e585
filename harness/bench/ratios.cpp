#include "harness/bench/ratios.hpp"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "harness/io/memory.hpp"

namespace ampbench::bench {
namespace {

// Keeps each run's items/s while the wrapped reporter prints as usual.
template <typename Base>
class Collecting : public Base {
 public:
  using Base::Base;
  Results results;

  void ReportRuns(const std::vector<benchmark::BenchmarkReporter::Run>& runs) override {
    for (const auto& run : runs) {
      if (run.error_occurred) continue;
      const auto it = run.counters.find("items_per_second");
      if (it == run.counters.end()) continue;
      const std::string name = run.run_name.str();
      Throughput& t = results[name];
      const std::size_t slash = name.find('/');
      t.family = name.substr(0, slash);
      t.input = slash == std::string::npos ? "" : name.substr(slash);
      t.family_index = run.family_index;
      if (!run.report_label.empty()) t.label = run.report_label;
      if (run.run_type == benchmark::BenchmarkReporter::Run::RT_Iteration) {
        t.repetitions.push_back(it->second.value);
      } else if (run.aggregate_name == "median") {
        t.median = it->second.value;
      }
    }
    Base::ReportRuns(runs);
  }
};

std::string format_flag(int argc, char** argv) {
  constexpr std::string_view kFlag = "--benchmark_format=";
  std::string format = "console";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, kFlag.size()) == kFlag) format = arg.substr(kFlag.size());
  }
  return format;
}

}  // namespace

double median_of(const Throughput& t) {
  if (t.median >= 0) return t.median;
  std::vector<double> v = t.repetitions;
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

void print_ratios(std::ostream& out, const Results& results, const RatioTable& table) {
  std::vector<const Throughput*> rows;
  for (const auto& [name, t] : results) rows.push_back(&t);
  std::sort(rows.begin(), rows.end(), [](const Throughput* a, const Throughput* b) {
    return a->input != b->input ? a->input < b->input : a->family_index < b->family_index;
  });
  char line[200];
  out << "\nThroughput relative to " << table.heading << " (medians of the repetitions):\n";
  std::snprintf(line, sizeof line, "%-40s %-7s %12s %9s  %s\n", "benchmark", "label", "items/s",
                "vs peer", "target");
  out << line;
  for (const Throughput* t : rows) {
    const std::string name = t->family + t->input;
    const double rate = median_of(*t);
    const double peer_rate = table.peer_rate(results, *t);
    std::snprintf(line, sizeof line, "%-40s %-7s %12.4g", name.c_str(), t->label.c_str(), rate);
    out << line;
    if (rate > 0 && peer_rate > 0) {
      const double ratio = rate / peer_rate;
      std::snprintf(line, sizeof line, " %8.3fx", ratio);
      out << line;
      if (const double target = table.target(t->family); target > 0) {
        std::snprintf(line, sizeof line, "  >= %gx %s", target, ratio >= target ? "ok" : "MISSED");
        out << line;
      }
    }
    out << "\n";
  }
  out.flush();
}

int run_with_ratios(int argc, char** argv, const std::vector<RatioTable>& tables) {
  // As the CLI runs: what a benchmark measures is the product's allocator too.
  (void)io::keep_freed_memory();
  const std::string format = format_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (format == "json") {
    Collecting<benchmark::JSONReporter> reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    for (const auto& table : tables) print_ratios(std::cerr, reporter.results, table);
  } else if (format == "console") {
    Collecting<benchmark::ConsoleReporter> reporter(isatty(STDOUT_FILENO)
                                                        ? benchmark::ConsoleReporter::OO_Defaults
                                                        : benchmark::ConsoleReporter::OO_Tabular);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    for (const auto& table : tables) {
      print_ratios(reporter.GetOutputStream(), reporter.results, table);
    }
  } else {
    benchmark::RunSpecifiedBenchmarks();
    std::fprintf(stderr, "ratios to the peer are printed with the console and json formats only\n");
  }
  benchmark::Shutdown();
  return 0;
}

}  // namespace ampbench::bench
