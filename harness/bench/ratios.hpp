// Benchmark programs that end with a table of ratios: each benchmark's throughput (items/s,
// median of the repetitions) divided by its named peer's in the same run, next to its target.
// Speed claims in this project are such ratios, never absolute times.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ampbench::bench {

struct Throughput {
  std::string family;               // e.g. BM_fp16_rne_encode
  std::string input;                // the rest of the name, e.g. /normal
  std::string label;                // the benchmark's label (e.g. the code path it took)
  std::int64_t family_index = 0;    // registration order
  std::vector<double> repetitions;  // items/s of each repetition
  double median = -1;               // the median aggregate, where reported
};
using Results = std::map<std::string, Throughput>;  // by benchmark name

double median_of(const Throughput& t);

struct RatioTable {
  std::string heading;  // what the ratios are relative to
  // The peer's items/s for a benchmark (-1 when it has none, e.g. for the peer itself).
  std::function<double(const Results&, const Throughput&)> peer_rate;
  // The target ratio of a benchmark family (0 when it has none).
  std::function<double(std::string_view family)> target;
};

void print_ratios(std::ostream& out, const Results& results, const RatioTable& table);

// Runs the registered benchmarks with the reporter that --benchmark_format asks for (console or
// json; the JSON goes to stdout and the ratios to stderr), then prints the ratio tables.
int run_with_ratios(int argc, char** argv, const std::vector<RatioTable>& tables);

}  // namespace ampbench::bench
