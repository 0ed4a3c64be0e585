// Exact accumulation of sums and dot products (Kulisch's long accumulator).
//
// ExactAccumulator is a fixed-point number wide enough for every product of two binary64 values
// and 2^30 carries above the largest: 136 signed 64-bit chunks, chunk i holding a multiple of
// 2^(32 i + kLowestExponent). A term is cut into 32-bit pieces that are added to consecutive
// chunks, so carries are deferred: a chunk absorbs 2^30 pieces before it could overflow, and the
// accumulator propagates them then, and when it is read. Adding is exact, so the result does not
// depend on the order of the terms, on how they were split among threads, or on merging order.
//
// NarrowAccumulator is the same idea in one 128-bit integer, for formats whose products all fit in
// fewer than 97 bits (fp16: 2^-48 .. 2^32, fp8): no chunks, no deferred carries, nothing to clear
// or to read back; the reference uses it for short dot products.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "harness/numeric/format.hpp"
#include "reference/exact/exact_value.hpp"
#include "reference/exact/uint128.hpp"

namespace ampbench::reference {

class ExactAccumulator {
 public:
  // Weight of the lowest bit: below 2^-2148, the smallest product of two binary64 subnormals.
  static constexpr int kLowestExponent = -68 * 32;
  static constexpr int kChunks = 136;  // up to 2^(kLowestExponent + 32 * kChunks) = 2^2176

  // add_all bins runs of at least this many terms.
  static constexpr std::size_t kBinnedFrom = 512;

  ExactAccumulator() { clear(); }
  void clear();

  // Adds x exactly: any binary64, infinities and NaN included.
  void add(double x) {
    const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
    const int biased = static_cast<int>((bits >> 52) & 0x7FF);
    if (biased == 0x7FF) return add_special(x);
    const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
    const bool negative = (bits >> 63) != 0;
    note_sign(negative);
    if (biased == 0) {
      add_scaled(negative, fraction, -1074);
    } else {
      add_scaled(negative, fraction | (std::uint64_t{1} << 52), biased - 1075);
    }
  }

  // Adds term(0), ..., term(n - 1), each a binary64, exactly. Long runs first collect terms in
  // one bin per sign and exponent (Neal, "Fast exact summation using small and large
  // superaccumulators", arXiv:1505.05571, 2015): a term's significand is added to its bin as an
  // integer, with no shift, no sign and no carry. Every 2^11 terms, before any bin could overflow
  // its 64 bits, and at the end, the bins used are moved into the chunks. Two sets of bins take
  // alternate terms, so that a run of terms of one exponent does not wait on one bin.
  template <class Term>
  void add_all(std::size_t n, Term term) {
    if (n < kBinnedFrom) {
      for (std::size_t i = 0; i < n; ++i) add(term(i));
      return;
    }
    Bins& bins = thread_bins();  // left empty by every use
    // Restrict-qualified: the bins alias nothing else the loop touches.
    std::uint64_t* __restrict even = bins.sum[0].data();
    std::uint64_t* __restrict odd = bins.sum[1].data();
    std::uint64_t touched = 0;  // bit b: a bin in block b (bins 64 b .. 64 b + 63) was used
    unsigned signs = 0;         // bit 0: a term with a clear sign bit; bit 1: with a set one
    const auto bin_term = [&](std::uint64_t* __restrict sum, double x) {
      const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
      const std::size_t bin = bits >> 52;  // sign and biased exponent
      if ((bin & 0x7FF) == 0x7FF) [[unlikely]] {
        add(x);  // an infinity or NaN
        return;
      }
      touched |= std::uint64_t{1} << (bin >> 6);
      signs |= 1u << (bin >> 11);
      const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
      sum[bin] += (bin & 0x7FF) == 0 ? fraction : fraction | (std::uint64_t{1} << 52);
    };
    std::size_t i = 0;
    while (i < n) {
      const std::size_t end = std::min(n, i + kBinRoom);  // 2^11 terms between emptyings
      for (; i + 1 < end; i += 2) {
        bin_term(even, term(i));
        bin_term(odd, term(i + 1));
      }
      if (i < end) bin_term(even, term(i++));
      empty_bins(bins, touched);
      touched = 0;
    }
    if (signs & 1) note_sign(false);
    if (signs & 2) note_sign(true);
  }

  // Adds a*b exactly, for any two binary64 values (the product is formed as a 106-bit integer).
  void add_product(double a, double b);

  // Adds (-1)^negative * m * 2^q exactly; m * 2^q must be a multiple of 2^kLowestExponent below
  // 2^2112 (every product of binary64 values is).
  void add_scaled(bool negative, std::uint64_t m, int q) {
    const int offset = q - kLowestExponent;
    const int index = offset >> 5;
    const uint128 shifted = static_cast<uint128>(m) << (offset & 31);
    // Branch-free negation (signs of real data are unpredictable): (p ^ mask) - mask is -p when
    // mask is all ones, p when it is zero.
    const std::int64_t mask = -static_cast<std::int64_t>(negative);
    const auto piece = [&](int k) {
      const auto p = static_cast<std::int64_t>(static_cast<std::uint32_t>(shifted >> (32 * k)));
      return (p ^ mask) - mask;
    };
    chunk_[index] += piece(0);
    chunk_[index + 1] += piece(1);
    chunk_[index + 2] += piece(2);
    if (++pending_ == kMaxPending) propagate_carries();
  }

  // Adds the value of another accumulator exactly.
  void merge(const ExactAccumulator& other);

  ExactValue value() const;

 private:
  static constexpr int kMaxPending = 1 << 30;
  static constexpr std::size_t kBins = 4096;
  static constexpr std::size_t kBinRoom = 2048;  // 2^11 significands < 2^53 sum below 2^64

  struct Bins {
    Bins() {
      for (auto& set : sum) set.fill(0);
    }
    std::array<std::array<std::uint64_t, kBins>, 2> sum;
  };
  // The calling thread's bins (64 KiB, set up once).
  static Bins& thread_bins();
  // Empties every used bin of the blocks marked in `touched`.
  void empty_bins(Bins& bins, std::uint64_t touched);

  void add_special(double x);
  void note_sign(bool negative) {  // without a branch: signs of real data are unpredictable
    any_negative_ |= negative;
    any_positive_ |= !negative;
  }
  void propagate_carries();

  std::array<std::int64_t, kChunks> chunk_;
  int pending_ = 0;
  bool any_positive_ = false;  // a term with a clear sign bit (for the sign of a zero sum)
  bool any_negative_ = false;
  bool nan_ = false;
  bool positive_infinity_ = false;
  bool negative_infinity_ = false;
};

// The exact accumulator for products of a format whose products are all multiples of
// 2^lowest_exponent below 2^(lowest_exponent + 96): a 128-bit two's-complement integer with at
// least 31 bits above the largest product, enough for 2^31 terms of the largest magnitude.
class NarrowAccumulator {
 public:
  // Whether products of values of f fit, and the exponent of the lowest bit they need.
  static bool fits(const numeric::Format& f);
  static int lowest_exponent(const numeric::Format& f);

  explicit NarrowAccumulator(const numeric::Format& f);

  // Adds a*b exactly; a and b are values of the format (any double that is a value of f).
  // Their product is exact in binary64 (2p <= 53 bits for these formats), so the fixed-point
  // conversion below is the only step, and it is exact.
  void add_product(double a, double b) {
    const double p = a * b;
    const std::uint64_t bits = std::bit_cast<std::uint64_t>(p);
    const int biased = static_cast<int>((bits >> 52) & 0x7FF);
    if (biased == 0x7FF) return add_special(a, b);
    const bool negative = (bits >> 63) != 0;
    any_negative_ |= negative;
    any_positive_ |= !negative;
    if (biased == 0) return;  // a zero (no product of these formats is a binary64 subnormal)
    const std::uint64_t m = (bits & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
    const int shift = biased - 1075 - lowest_;  // may be negative: then m has that many zeros
    const uint128 term =
        shift >= 0 ? static_cast<uint128>(m) << shift : static_cast<uint128>(m >> -shift);
    sum_ += negative ? -term : term;
  }

  ExactValue value() const;

 private:
  void add_special(double a, double b);

  int lowest_;
  uint128 sum_ = 0;  // two's complement
  bool any_positive_ = false;
  bool any_negative_ = false;
  bool nan_ = false;
  bool positive_infinity_ = false;
  bool negative_infinity_ = false;
};

}  // namespace ampbench::reference
