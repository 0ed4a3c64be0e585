#include "reference/exact/exact_value.hpp"

#include <fmt/format.h>

#include <bit>
#include <boost/multiprecision/cpp_int.hpp>
#include <limits>
#include <string_view>
#include <utility>

#include "reference/exact/uint128.hpp"

namespace ampbench::reference {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Limb i of the magnitude, 0 outside it.
std::uint32_t limb(const std::vector<std::uint32_t>& m, std::int64_t i) {
  return i >= 0 && i < static_cast<std::int64_t>(m.size()) ? m[static_cast<std::size_t>(i)] : 0;
}

// The 64 bits of the magnitude from bit position `position` up (bits below 0 are zero).
std::uint64_t bits_from(const std::vector<std::uint32_t>& m, std::int64_t position) {
  const std::int64_t first = position >= 0 ? position / 32 : -((-position + 31) / 32);
  const int offset = static_cast<int>(position - first * 32);  // 0..31
  const uint128 three = static_cast<uint128>(limb(m, first)) |
                        static_cast<uint128>(limb(m, first + 1)) << 32 |
                        static_cast<uint128>(limb(m, first + 2)) << 64;
  return static_cast<std::uint64_t>(three >> offset);
}

// Whether any bit of the magnitude below `position` is set.
bool any_below(const std::vector<std::uint32_t>& m, std::int64_t position) {
  if (position <= 0) return false;
  const std::int64_t whole = position / 32;
  for (std::int64_t i = 0; i < whole && i < static_cast<std::int64_t>(m.size()); ++i) {
    if (m[static_cast<std::size_t>(i)] != 0) return true;
  }
  const int partial = static_cast<int>(position % 32);
  return partial != 0 && (limb(m, whole) & ((std::uint32_t{1} << partial) - 1)) != 0;
}

std::int64_t bit_length(const std::vector<std::uint32_t>& m) {
  if (m.empty()) return 0;
  return static_cast<std::int64_t>(m.size() - 1) * 32 + std::bit_width(m.back());
}

boost::multiprecision::cpp_int to_integer(const std::vector<std::uint32_t>& m) {
  boost::multiprecision::cpp_int n;
  if (!m.empty()) boost::multiprecision::import_bits(n, m.rbegin(), m.rend(), 32, true);
  return n;
}

const char* special_text(ExactKind kind) {
  return kind == ExactKind::nan ? "nan" : (kind == ExactKind::positive_infinity ? "inf" : "-inf");
}

}  // namespace

ExactValue::ExactValue(ZeroSign zero) : negative_(zero == ZeroSign::negative), zero_(zero) {}

ExactValue ExactValue::special(ExactKind kind) {
  ExactValue v;
  v.kind_ = kind;
  v.negative_ = kind == ExactKind::negative_infinity;
  return v;
}

ExactValue::ExactValue(bool negative, std::vector<std::uint32_t> magnitude, int exponent,
                       ZeroSign zero)
    : negative_(negative), zero_(zero), magnitude_(std::move(magnitude)), exponent_(exponent) {
  while (!magnitude_.empty() && magnitude_.back() == 0) magnitude_.pop_back();
  std::size_t low_zeros = 0;
  while (low_zeros < magnitude_.size() && magnitude_[low_zeros] == 0) ++low_zeros;
  magnitude_.erase(magnitude_.begin(), magnitude_.begin() + static_cast<std::ptrdiff_t>(low_zeros));
  exponent_ += static_cast<int>(32 * low_zeros);
  if (magnitude_.empty()) {
    exponent_ = 0;
    negative_ = zero == ZeroSign::negative;
  }
}

numeric::Window ExactValue::window() const {
  const std::int64_t length = bit_length(magnitude_);
  if (length == 0) return numeric::Window{negative_, 0, 0, false, 0};
  return numeric::Window{negative_, bits_from(magnitude_, length - 64),
                         bits_from(magnitude_, length - 128), any_below(magnitude_, length - 128),
                         static_cast<int>(exponent_ + length - 64)};
}

numeric::Rounded ExactValue::round(const numeric::Format& f, numeric::Rounding mode,
                                   std::uint32_t random) const {
  switch (kind_) {
    case ExactKind::nan:
      return numeric::round_to(f, mode, std::numeric_limits<double>::quiet_NaN());
    case ExactKind::positive_infinity: return numeric::round_to(f, mode, kInfinity);
    case ExactKind::negative_infinity: return numeric::round_to(f, mode, -kInfinity);
    case ExactKind::finite: break;
  }
  if (is_zero()) {
    const bool negative = zero_ == ZeroSign::negative ||
                          (zero_ == ZeroSign::cancelled && mode == numeric::Rounding::downward);
    return numeric::round_to(f, mode, negative ? -0.0 : 0.0);
  }
  return numeric::round_window(f, mode, window(), random);
}

double ExactValue::to_double() const {
  return round(numeric::formats::fp64, numeric::Rounding::nearest_even).value;
}

std::string ExactValue::to_decimal() const {
  if (kind_ != ExactKind::finite) return special_text(kind_);
  const char* sign = negative_ ? "-" : "";
  if (is_zero()) return fmt::format("{}0", sign);
  // magnitude * 2^e = magnitude * 5^-e * 10^e for e < 0.
  boost::multiprecision::cpp_int n = to_integer(magnitude_);
  std::int64_t decimal_exponent = 0;
  if (exponent_ >= 0) {
    n <<= exponent_;
  } else {
    n *= boost::multiprecision::pow(boost::multiprecision::cpp_int(5),
                                    static_cast<unsigned>(-exponent_));
    decimal_exponent = exponent_;
  }
  std::string digits = n.str();
  decimal_exponent += static_cast<std::int64_t>(digits.size()) - 1;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const std::string_view fraction = std::string_view(digits).substr(1);
  return fmt::format("{}{}{}{}e{}{:02}", sign, digits[0], fraction.empty() ? "" : ".", fraction,
                     decimal_exponent < 0 ? '-' : '+',
                     decimal_exponent < 0 ? -decimal_exponent : decimal_exponent);
}

std::string ExactValue::to_hex() const {
  if (kind_ != ExactKind::finite) return special_text(kind_);
  const char* sign = negative_ ? "-" : "";
  if (is_zero()) return fmt::format("{}0x0p+0", sign);
  const std::int64_t length = bit_length(magnitude_);
  const std::int64_t binary_exponent = exponent_ + length - 1;
  // The bits after the leading one, four at a time from the top.
  std::string fraction;
  for (std::int64_t position = length - 1 - 4; position > -4; position -= 4) {
    fraction += "0123456789abcdef"[bits_from(magnitude_, position) & 0xF];
  }
  while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  return fmt::format("{}0x1{}{}p{:+}", sign, fraction.empty() ? "" : ".", fraction,
                     binary_exponent);
}

}  // namespace ampbench::reference
