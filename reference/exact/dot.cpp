#include "reference/exact/dot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

#include "harness/numeric/ulp.hpp"
#include "reference/exact/accumulator.hpp"
#include "reference/exact/uint128.hpp"

namespace ampbench::reference {
namespace {

// Every product of two values of f is a binary64 value (at most 53 bits, and on binary64's grid
// down to its subnormals): fp32, tf32, bf16 and narrower.
bool products_exact_in_binary64(const numeric::Format& f) {
  return 2 * f.precision <= 53 && 2 * (f.emin - f.fraction_bits()) >= -1074 && f.emax <= 511;
}

void require_same_length(std::size_t a, std::size_t b) {
  if (a != b) {
    throw std::invalid_argument(
        fmt::format("dot product of vectors of different lengths: a has {}, b has {}", a, b));
  }
}

// The exact sum of a[i] * b[i] + c, with the accumulator the format allows; `c` is any binary64
// (0 when absent), `stride` the distance between consecutive elements of b.
//
// The narrow accumulator serves short fp16 and fp8 dot products (a matrix product's inner
// dimension), where the long accumulator's fixed costs (clearing and reading 136 chunks) dominate.
// Long ones go to the long accumulator's bins, which measured faster per term (2^20 fp16 terms:
// 1.26e8/s binned, 0.69e8/s narrow, input checks included).
ExactValue dot_of_values(const numeric::Format& f, const double* a, const double* b, std::size_t n,
                         std::size_t stride, const double* c) {
  if (c == nullptr && NarrowAccumulator::fits(f) && n < ExactAccumulator::kBinnedFrom) {
    NarrowAccumulator acc(f);
    for (std::size_t i = 0; i < n; ++i) acc.add_product(a[i], b[i * stride]);
    return acc.value();
  }
  ExactAccumulator acc;
  if (products_exact_in_binary64(f)) {
    acc.add_all(n, [&](std::size_t i) { return a[i] * b[i * stride]; });
  } else {
    for (std::size_t i = 0; i < n; ++i) acc.add_product(a[i], b[i * stride]);
  }
  if (c != nullptr) acc.add(*c);
  return acc.value();
}

// Draws for sample_positions: splitmix64 at consecutive positions, mapped to [0, range) without
// bias (Lemire, ACM TOMACS 2019: multiply, and reject the few draws that would favour some values).
class Draws {
 public:
  explicit Draws(std::uint64_t seed) : seed_(seed) {}
  std::uint64_t below(std::uint64_t range) {
    const std::uint64_t reject_below = (0 - range) % range;
    for (;;) {
      const uint128 m = static_cast<uint128>(numeric::splitmix64(seed_, index_++)) * range;
      if (static_cast<std::uint64_t>(m) >= reject_below) return static_cast<std::uint64_t>(m >> 64);
    }
  }

 private:
  std::uint64_t seed_;
  std::uint64_t index_ = 0;
};

}  // namespace

bool is_value_of(const numeric::Format& f, double x) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  if (biased == 0x7FF) return fraction != 0 || f.has_infinity();  // NaN, or an infinity
  if (biased == 0 && fraction == 0) return true;                  // a zero
  // |x| = m * 2^q with m < 2^53, in [2^e, 2^(e+1)); f's grid there has spacing 2^qt.
  const std::uint64_t m = biased == 0 ? fraction : fraction | (std::uint64_t{1} << 52);
  const int q = biased == 0 ? -1074 : biased - 1075;
  const int e = q + static_cast<int>(std::bit_width(m)) - 1;
  if (e > f.emax || (e < f.emin && !f.subnormals)) return false;
  const int qt = std::max(e, f.emin) - f.fraction_bits();
  const int shift = qt - q;  // low bits of m that must be zero
  if (shift >= 64 || (shift > 0 && (m & ((std::uint64_t{1} << shift) - 1)) != 0)) return false;
  // The top of the range: OCP e4m3's largest significand is NaN, not a number.
  return e < f.emax || (shift > 0 ? m >> shift : m << -shift) <= f.max_significand();
}

void require_values_of(const numeric::Format& f, std::span<const double> x, const char* name) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!is_value_of(f, x[i])) {
      throw std::invalid_argument(
          fmt::format("{}[{}] = {:a} is not a value of {}", name, i, x[i], f.name));
    }
  }
}

ExactValue exact_dot(const numeric::Format& input, std::span<const double> a,
                     std::span<const double> b) {
  require_same_length(a.size(), b.size());
  require_values_of(input, a, "a");
  require_values_of(input, b, "b");
  return dot_of_values(input, a.data(), b.data(), a.size(), 1, nullptr);
}

ExactValue exact_dot(std::span<const float> a, std::span<const float> b) {
  require_same_length(a.size(), b.size());
  ExactAccumulator acc;
  // A product of two binary32 values is a binary64 value (48 bits, above 2^-298).
  acc.add_all(a.size(),
              [&](std::size_t i) { return static_cast<double>(a[i]) * static_cast<double>(b[i]); });
  return acc.value();
}

ExactValue exact_sum(std::span<const double> x) {
  ExactAccumulator acc;
  acc.add_all(x.size(), [&](std::size_t i) { return x[i]; });
  return acc.value();
}

NaiveDot naive_dot(const numeric::RoundingOptions& accumulate, std::span<const double> a,
                   std::span<const double> b) {
  require_same_length(a.size(), b.size());
  NaiveDot result{0.0, {}};
  ExactAccumulator step;
  for (std::size_t i = 0; i < a.size(); ++i) {
    step.clear();
    step.add(result.value);
    step.add_product(a[i], b[i]);
    const std::uint32_t random =
        numeric::is_stochastic(accumulate.mode) ? numeric::stochastic_draw(accumulate.seed, i) : 0u;
    const numeric::Rounded r = step.value().round(accumulate.format, accumulate.mode, random);
    result.value = r.value;
    result.step_events.add(r.event);
  }
  return result;
}

DotComparison compare_dot(const numeric::Format& format, const numeric::RoundingOptions& accumulate,
                          std::span<const double> a, std::span<const double> b) {
  const numeric::Rounding mode = accumulate.mode;
  ExactValue exact = exact_dot(format, a, b);
  const std::uint32_t draw =
      numeric::is_stochastic(mode) ? numeric::stochastic_draw(accumulate.seed, a.size()) : 0u;
  const numeric::Rounded rounded = exact.round(format, mode, draw);
  const NaiveDot naive = naive_dot(accumulate, a, b);
  const numeric::Rounding reference_mode =
      numeric::is_stochastic(mode) ? numeric::Rounding::nearest_even : mode;
  const double naive_reference = exact.round(accumulate.format, reference_mode).value;
  const auto ulp_error = numeric::ulp_distance(accumulate.format, naive.value, naive_reference);
  return {std::move(exact), rounded, naive, naive_reference, ulp_error};
}

std::vector<std::size_t> sample_positions(std::size_t count, std::size_t k, std::uint64_t seed) {
  std::vector<std::size_t> positions;
  if (k >= count) {
    positions.resize(count);
    for (std::size_t i = 0; i < count; ++i) positions[i] = i;
    return positions;
  }
  // Floyd's algorithm (Bentley and Floyd, CACM 30(9), 1987): k draws, each subset equally likely.
  std::set<std::size_t> chosen;
  Draws draws(seed);
  for (std::size_t j = count - k; j < count; ++j) {
    const std::size_t t = draws.below(j + 1);
    chosen.insert(chosen.contains(t) ? j : t);
  }
  positions.assign(chosen.begin(), chosen.end());
  return positions;
}

GemmReference exact_gemm(const numeric::Format& input, const GemmOperands& op,
                         const numeric::RoundingOptions& output,
                         std::span<const std::size_t> positions, unsigned threads) {
  if (op.a.size() != op.m * op.k || op.b.size() != op.k * op.n ||
      (!op.c.empty() && op.c.size() != op.m * op.n)) {
    throw std::invalid_argument(fmt::format(
        "gemm {}x{}x{}: a has {} elements (expected {}), b {} ({}), c {} ({} or none)", op.m, op.n,
        op.k, op.a.size(), op.m * op.k, op.b.size(), op.k * op.n, op.c.size(), op.m * op.n));
  }
  require_values_of(input, op.a, "a");
  require_values_of(input, op.b, "b");

  GemmReference result;
  if (positions.empty()) {
    result.positions = sample_positions(op.m * op.n, op.m * op.n, 0);
  } else {
    result.positions.assign(positions.begin(), positions.end());
    if (!std::is_sorted(result.positions.begin(), result.positions.end()) ||
        std::adjacent_find(result.positions.begin(), result.positions.end()) !=
            result.positions.end() ||
        result.positions.back() >= op.m * op.n) {
      throw std::invalid_argument(fmt::format(
          "gemm output positions must be increasing, distinct and below {}", op.m * op.n));
    }
  }
  const std::size_t count = result.positions.size();
  result.rounded.resize(count);
  result.nearest.resize(count);
  std::vector<numeric::RoundingEvent> events(count);

  // Columns of B made contiguous when most of them are read, else read in place with a stride.
  std::vector<double> b_columns;
  if (count >= op.n) {
    b_columns.resize(op.k * op.n);
    for (std::size_t i = 0; i < op.k; ++i) {
      for (std::size_t j = 0; j < op.n; ++j) b_columns[j * op.k + i] = op.b[i * op.n + j];
    }
  }
  const auto work = [&](std::size_t begin, std::size_t end) {
    for (std::size_t e = begin; e < end; ++e) {
      const std::size_t p = result.positions[e];
      const std::size_t row = p / op.n;
      const std::size_t column = p % op.n;
      const double* c = op.c.empty() ? nullptr : op.c.data() + p;
      const ExactValue exact =
          b_columns.empty()
              ? dot_of_values(input, op.a.data() + row * op.k, op.b.data() + column, op.k, op.n, c)
              : dot_of_values(input, op.a.data() + row * op.k, b_columns.data() + column * op.k,
                              op.k, 1, c);
      const std::uint32_t random =
          numeric::is_stochastic(output.mode) ? numeric::stochastic_draw(output.seed, p) : 0u;
      const numeric::Rounded r = exact.round(output.format, output.mode, random);
      result.rounded[e] = r.value;
      result.nearest[e] = exact.to_double();
      events[e] = r.event;
    }
  };
  const unsigned workers =
      std::max(1u, std::min<unsigned>(threads == 0 ? std::thread::hardware_concurrency() : threads,
                                      static_cast<unsigned>(std::min<std::size_t>(count, 1024))));
  {
    std::vector<std::jthread> pool;
    for (unsigned w = 1; w < workers; ++w) {
      pool.emplace_back(work, count * w / workers, count * (w + 1) / workers);
    }
    work(0, count / workers);
  }
  for (const auto event : events) result.events.add(event);
  return result;
}

}  // namespace ampbench::reference
