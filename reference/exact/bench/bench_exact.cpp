// Throughput of the exact references against two peers in the same run:
//   - a plain binary64 loop, s += double(a[i]) * double(b[i]) (fast, and wrong in general):
//     the exact dot product of binary32 data should reach >= 0.25x of it;
//   - a naive multiprecision loop in Boost's cpp_bin_float_100 (about 332 bits, exact for these
//     inputs): the exact dot product should be >= 50x faster.
// Inputs: N(0,1) samples rounded to binary32, seeded, lengths 4096 (in L1/L2) and 2^20 (in L3 or
// memory). Each multiprecision run checks that its result, rounded to nearest binary64, is the
// exact dot product's: the comparison is between equal answers.
//
// Also the 256x256x256 matrix product: exact and correctly rounded to fp32 on one thread, and the
// plain binary64 triple loop; items are multiply-adds.
//
// Run with repetitions on a shared machine:
//   ampbench_bench_exact --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <boost/multiprecision/cpp_bin_float.hpp>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "harness/bench/ratios.hpp"
#include "reference/exact/dot.hpp"

namespace {

namespace bench = ampbench::bench;
namespace reference = ampbench::reference;
namespace numeric = ampbench::numeric;

struct Vectors {
  std::vector<float> a;
  std::vector<float> b;
};

const Vectors& vectors(std::size_t n) {
  static std::map<std::size_t, Vectors> cache;
  auto [it, inserted] = cache.try_emplace(n);
  if (inserted) {
    std::mt19937_64 rng(20261129 + n);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    it->second.a.resize(n);
    it->second.b.resize(n);
    for (auto& x : it->second.a) x = normal(rng);
    for (auto& x : it->second.b) x = normal(rng);
  }
  return it->second;
}

void set_items(benchmark::State& state, std::int64_t per_iteration) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * per_iteration);
}

void BM_double_loop(benchmark::State& state) {
  const Vectors& v = vectors(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    double s = 0;
    for (std::size_t i = 0; i < v.a.size(); ++i) {
      s += static_cast<double>(v.a[i]) * static_cast<double>(v.b[i]);
    }
    benchmark::DoNotOptimize(s);
  }
  set_items(state, state.range(0));
}

void BM_exact_dot(benchmark::State& state) {
  const Vectors& v = vectors(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    const auto r = reference::exact_dot(v.a, v.b).round(numeric::formats::fp32,
                                                        numeric::Rounding::nearest_even);
    benchmark::DoNotOptimize(r);
  }
  set_items(state, state.range(0));
}

void BM_cpp_bin_float_100(benchmark::State& state) {
  const Vectors& v = vectors(static_cast<std::size_t>(state.range(0)));
  using Wide = boost::multiprecision::cpp_bin_float_100;
  Wide s = 0;
  for (auto _ : state) {
    s = 0;
    for (std::size_t i = 0; i < v.a.size(); ++i) s += Wide(v.a[i]) * Wide(v.b[i]);
    benchmark::DoNotOptimize(s);
  }
  if (static_cast<double>(s) != reference::exact_dot(v.a, v.b).to_double()) {
    state.SkipWithError("cpp_bin_float_100 and the exact dot product disagree");
  }
  set_items(state, state.range(0));
}

// fp16 data in binary64 containers, with the check that every input is an fp16 value (these
// lengths take the binned long accumulator; the narrow one serves shorter dot products).
void BM_exact_dot_fp16(benchmark::State& state) {
  const Vectors& v = vectors(static_cast<std::size_t>(state.range(0)));
  std::vector<double> a(v.a.size()), b(v.b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = numeric::round_to(numeric::formats::fp16, numeric::Rounding::nearest_even, v.a[i]).value;
    b[i] = numeric::round_to(numeric::formats::fp16, numeric::Rounding::nearest_even, v.b[i]).value;
  }
  for (auto _ : state) {
    const auto r = reference::exact_dot(numeric::formats::fp16, a, b)
                       .round(numeric::formats::fp16, numeric::Rounding::nearest_even);
    benchmark::DoNotOptimize(r);
  }
  set_items(state, state.range(0));
}

constexpr std::size_t kGemm = 256;

std::vector<double> gemm_operand(std::uint64_t seed) {
  const Vectors& v = vectors(kGemm * kGemm + seed);  // distinct seeds by length
  return {v.a.begin(), v.a.begin() + kGemm * kGemm};
}

void BM_double_gemm(benchmark::State& state) {
  const auto a = gemm_operand(0);
  const auto b = gemm_operand(1);
  std::vector<double> c(kGemm * kGemm);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kGemm; ++i) {
      for (std::size_t j = 0; j < kGemm; ++j) {
        double s = 0;
        for (std::size_t l = 0; l < kGemm; ++l) s += a[i * kGemm + l] * b[l * kGemm + j];
        c[i * kGemm + j] = s;
      }
    }
    benchmark::DoNotOptimize(c.data());
  }
  set_items(state, kGemm * kGemm * kGemm);
}

void BM_exact_gemm(benchmark::State& state) {
  const auto a = gemm_operand(0);
  const auto b = gemm_operand(1);
  numeric::RoundingOptions out;
  out.format = numeric::formats::fp32;
  const reference::GemmOperands op{kGemm, kGemm, kGemm, a, b, {}};
  for (auto _ : state) {
    const auto r = reference::exact_gemm(numeric::formats::fp32, op, out, {}, 1);
    benchmark::DoNotOptimize(r.rounded.data());
  }
  set_items(state, kGemm * kGemm * kGemm);
}

BENCHMARK(BM_double_loop)->Arg(4096)->Arg(1 << 20);
BENCHMARK(BM_exact_dot)->Arg(4096)->Arg(1 << 20);
BENCHMARK(BM_exact_dot_fp16)->Arg(4096)->Arg(1 << 20);
BENCHMARK(BM_cpp_bin_float_100)->Arg(4096)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_double_gemm)->Name("BM_double_gemm/256")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_exact_gemm)->Name("BM_exact_gemm/256")->Unit(benchmark::kMillisecond);

double rate_of(const bench::Results& results, const std::string& name) {
  const auto it = results.find(name);
  return it == results.end() ? -1 : bench::median_of(it->second);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::RatioTable versus_double{
      "the plain binary64 loop on the same input (BM_double_loop, BM_double_gemm)",
      [](const bench::Results& results, const bench::Throughput& t) {
        if (t.family == "BM_double_loop" || t.family == "BM_double_gemm") return -1.0;
        return rate_of(
            results, (t.family == "BM_exact_gemm" ? "BM_double_gemm" : "BM_double_loop") + t.input);
      },
      [](std::string_view family) { return family == "BM_exact_dot" ? 0.25 : 0.0; }};
  const bench::RatioTable versus_multiprecision{
      "the naive cpp_bin_float_100 loop on the same input",
      [](const bench::Results& results, const bench::Throughput& t) {
        if (t.family != "BM_exact_dot") return -1.0;
        return rate_of(results, "BM_cpp_bin_float_100" + t.input);
      },
      [](std::string_view family) { return family == "BM_exact_dot" ? 50.0 : 0.0; }};
  return bench::run_with_ratios(argc, argv, {versus_double, versus_multiprecision});
}
