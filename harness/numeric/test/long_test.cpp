// Every one of the 2^32 binary32 inputs through the fp16 and bf16 round-to-nearest-even array
// paths (encode_array with overflow to infinity and with saturation, round_array, and F16C for
// fp16), against the MPFR oracle. Minutes per format on two threads: labelled "long", run with
// ctest -L long.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/numeric/rounding.hpp"
#include "harness/numeric/rounding_array.hpp"
#include "harness/numeric/test/mpfr_oracle.hpp"
#include "harness/numeric/test/test_support.hpp"

namespace ampbench::numeric::test {
namespace {

constexpr std::uint64_t kChunk = 1 << 16;
constexpr std::uint64_t kInputs = std::uint64_t{1} << 32;

class Failures {
 public:
  void add(const std::string& message) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (++count_ <= 20) messages_.push_back(message);
  }
  void report() const {
    for (const auto& m : messages_) ADD_FAILURE() << m;
    EXPECT_EQ(count_, 0u) << "failures in all";
  }

 private:
  std::mutex mutex_;
  std::uint64_t count_ = 0;
  std::vector<std::string> messages_;
};

// Checks the inputs [begin, end) chunk by chunk.
void sweep(const Format& f, std::uint64_t begin, std::uint64_t end, bool use_f16c, bool verbose,
           Failures& failures) {
  const RoundingOptions infinity{f, Rounding::nearest_even, 0, Container::binary32};
  const RoundingOptions saturate{variant(f, true, Overflow::saturate), Rounding::nearest_even, 0,
                                 Container::binary32};
  const oracle::Spec spec = oracle::spec_of(f);
  std::vector<float> in(kChunk), rounded(kChunk);
  std::vector<std::uint16_t> encoded(kChunk), saturated(kChunk);
  const auto started = std::chrono::steady_clock::now();
  for (std::uint64_t first = begin; first < end; first += kChunk) {
    for (std::uint64_t i = 0; i < kChunk; ++i) {
      in[i] = float_of(static_cast<std::uint32_t>(first + i));
    }
    encode_array(infinity, in, encoded);
    encode_array(saturate, in, saturated);
    round_array(infinity, in, rounded);
    for (std::uint64_t i = 0; i < kChunk; ++i) {
      const double x = in[i];
      const double want = oracle::round(spec, Rounding::nearest_even, x).value;
      const double want_saturated = std::isinf(want) ? std::copysign(spec.max_finite, want) : want;
      const double got = decode(f, encoded[i]);
      // round_array gives the value of the encoding (NaN payloads included), which must be the
      // oracle's; NaN encodings are checked against the payload rule.
      bool ok = same(got, want) && same(decode(f, saturated[i]), want_saturated) &&
                bits_of(rounded[i]) == bits_of(static_cast<float>(got));
      if (std::isnan(want)) {
        ok = ok && encoded[i] == expected_nan_bits(f, x) && saturated[i] == expected_nan_bits(f, x);
      }
      if (use_f16c) ok = ok && f16c_encode(in[i]) == encoded[i];
      if (!ok) {
        failures.add(std::string(f.name) + " x=" + describe(in[i]) + ": encode_array " +
                     fmt_bits(encoded[i]) + " (saturating " + fmt_bits(saturated[i]) +
                     "), round_array " + describe(rounded[i]) + ", oracle " + describe(want) +
                     (use_f16c ? ", F16C " + fmt_bits(f16c_encode(in[i])) : std::string()));
      }
    }
    const std::uint64_t done = first + kChunk - begin;
    if (verbose && done % ((end - begin) / 8) == 0) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::printf("%s: %d%% done, %.0f s\n", f.name, static_cast<int>(100 * done / (end - begin)),
                  seconds);
      std::fflush(stdout);
    }
  }
}

void sweep_all(const Format& f, bool use_f16c) {
  // MPFR keeps its exponent range (which the oracle changes) per thread only when built with
  // thread-local storage; otherwise run on one thread.
  const unsigned threads = oracle::thread_safe() ? 2 : 1;
  Failures failures;
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      sweep(f, kInputs / threads * t, kInputs / threads * (t + 1), use_f16c, t == 0, failures);
    });
  }
  for (auto& w : workers) w.join();
  failures.report();
}

TEST(AllBinary32Inputs, Fp16NearestEven) {
  const bool f16c = has_f16c();
  if (!f16c) std::printf("no F16C on this CPU: checking the software paths only\n");
  std::printf("paths: %s (overflow to infinity), %s (saturating)\n",
              rounding_path({formats::fp16, Rounding::nearest_even, 0, Container::binary32}),
              rounding_path({variant(formats::fp16, true, Overflow::saturate),
                             Rounding::nearest_even, 0, Container::binary32}));
  sweep_all(formats::fp16, f16c);
}

TEST(AllBinary32Inputs, Bf16NearestEven) {
  std::printf("path: %s\n",
              rounding_path({formats::bf16, Rounding::nearest_even, 0, Container::binary32}));
  sweep_all(formats::bf16, false);
}

}  // namespace
}  // namespace ampbench::numeric::test
