#include "reference/exact/accumulator.hpp"

#include <bit>
#include <cmath>
#include <vector>

namespace ampbench::reference {
namespace {

ZeroSign zero_sign(bool any_positive, bool any_negative) {
  if (!any_negative) return ZeroSign::positive;
  if (!any_positive) return ZeroSign::negative;
  return ZeroSign::cancelled;
}

ExactValue special_value(bool nan, bool positive_infinity, bool negative_infinity) {
  if (nan || (positive_infinity && negative_infinity)) return ExactValue::special(ExactKind::nan);
  return ExactValue::special(positive_infinity ? ExactKind::positive_infinity
                                               : ExactKind::negative_infinity);
}

// A finite nonzero binary64 as m * 2^q with m < 2^53.
struct Split {
  std::uint64_t m;
  int q;
};
Split split(double x) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  if (biased == 0) return {fraction, -1074};
  return {fraction | (std::uint64_t{1} << 52), biased - 1075};
}

}  // namespace

void ExactAccumulator::clear() {
  chunk_.fill(0);
  pending_ = 0;
  any_positive_ = any_negative_ = false;
  nan_ = positive_infinity_ = negative_infinity_ = false;
}

void ExactAccumulator::add_special(double x) {
  if (std::isnan(x)) {
    nan_ = true;
  } else {
    (x > 0 ? positive_infinity_ : negative_infinity_) = true;
  }
}

void ExactAccumulator::add_product(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) {
    return add_special(a * b);  // NaN for a NaN operand and for inf * 0, else +-inf
  }
  const bool negative = std::signbit(a) != std::signbit(b);
  note_sign(negative);
  if (a == 0 || b == 0) return;
  const Split x = split(a);
  const Split y = split(b);
  const uint128 product = static_cast<uint128>(x.m) * y.m;
  add_scaled(negative, static_cast<std::uint64_t>(product), x.q + y.q);
  add_scaled(negative, static_cast<std::uint64_t>(product >> 64), x.q + y.q + 64);
}

ExactAccumulator::Bins& ExactAccumulator::thread_bins() {
  thread_local Bins bins;
  return bins;
}

void ExactAccumulator::empty_bins(Bins& bins, std::uint64_t touched) {
  constexpr std::size_t kBlock = kBins / 64;
  for (; touched != 0; touched &= touched - 1) {
    const std::size_t first = static_cast<std::size_t>(std::countr_zero(touched)) * kBlock;
    for (std::size_t bin = first; bin < first + kBlock; ++bin) {
      const std::uint64_t total = bins.sum[0][bin] + bins.sum[1][bin];  // < 2^11 * 2^53
      if (total == 0) continue;
      bins.sum[0][bin] = bins.sum[1][bin] = 0;
      const int biased = static_cast<int>(bin & 0x7FF);
      add_scaled(bin >= 0x800, total, biased == 0 ? -1074 : biased - 1075);
    }
  }
}

void ExactAccumulator::propagate_carries() {
  for (int i = 0; i + 1 < kChunks; ++i) {
    const std::int64_t carry = chunk_[i] >> 32;  // floor division: the rest is in [0, 2^32)
    chunk_[i] -= carry * (std::int64_t{1} << 32);
    chunk_[i + 1] += carry;
  }
  pending_ = 0;
}

void ExactAccumulator::merge(const ExactAccumulator& other) {
  ExactAccumulator carried = other;
  carried.propagate_carries();
  propagate_carries();
  for (int i = 0; i < kChunks; ++i) chunk_[i] += carried.chunk_[i];
  pending_ = 2;  // each chunk now holds at most two pieces' worth
  any_positive_ = any_positive_ || other.any_positive_;
  any_negative_ = any_negative_ || other.any_negative_;
  nan_ = nan_ || other.nan_;
  positive_infinity_ = positive_infinity_ || other.positive_infinity_;
  negative_infinity_ = negative_infinity_ || other.negative_infinity_;
}

ExactValue ExactAccumulator::value() const {
  if (nan_ || positive_infinity_ || negative_infinity_) {
    return special_value(nan_, positive_infinity_, negative_infinity_);
  }
  ExactAccumulator v = *this;
  v.propagate_carries();
  // Every chunk but the top is now in [0, 2^32); the top one carries the sign.
  const bool negative = v.chunk_[kChunks - 1] < 0;
  if (negative) {
    for (auto& c : v.chunk_) c = -c;
    v.propagate_carries();
  }
  std::vector<std::uint32_t> limbs(kChunks);
  for (int i = 0; i < kChunks; ++i) limbs[i] = static_cast<std::uint32_t>(v.chunk_[i]);
  return ExactValue(negative, std::move(limbs), kLowestExponent,
                    zero_sign(any_positive_, any_negative_));
}

bool NarrowAccumulator::fits(const numeric::Format& f) {
  const int lowest = lowest_exponent(f);
  const int highest = 2 * f.emax + 2;  // every product is below 2^(2 emax + 2)
  return 2 * f.precision <= 53 && lowest >= -1022 && highest - lowest <= 96;
}

int NarrowAccumulator::lowest_exponent(const numeric::Format& f) {
  return 2 * (f.emin - f.fraction_bits());
}

NarrowAccumulator::NarrowAccumulator(const numeric::Format& f) : lowest_(lowest_exponent(f)) {}

void NarrowAccumulator::add_special(double a, double b) {
  const double p = a * b;
  if (std::isnan(p)) {
    nan_ = true;
  } else {
    (p > 0 ? positive_infinity_ : negative_infinity_) = true;
  }
}

ExactValue NarrowAccumulator::value() const {
  if (nan_ || positive_infinity_ || negative_infinity_) {
    return special_value(nan_, positive_infinity_, negative_infinity_);
  }
  const bool negative = (sum_ >> 127) != 0;
  const uint128 magnitude = negative ? -sum_ : sum_;
  std::vector<std::uint32_t> limbs(4);
  for (int i = 0; i < 4; ++i) limbs[i] = static_cast<std::uint32_t>(magnitude >> (32 * i));
  return ExactValue(negative, std::move(limbs), lowest_, zero_sign(any_positive_, any_negative_));
}

}  // namespace ampbench::reference
