// The exact value of a sum or dot product, as the accumulators in accumulator.hpp finish it: a
// signed integer of any length times a power of two, or a special value. It rounds correctly to
// any format in any mode, and prints exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::reference {

enum class ExactKind : std::uint8_t {
  finite,
  nan,                // a NaN term, inf * 0, or infinities of both signs
  positive_infinity,  // an infinite term (and no NaN, no infinity of the other sign)
  negative_infinity,
};

// The sign of an exact zero sum follows IEEE 754 §6.3, as if the terms were added exactly.
enum class ZeroSign : std::uint8_t {
  positive,   // every term was +0 (or there were none)
  negative,   // every term was -0
  cancelled,  // terms of both signs summed to zero: +0, or -0 when rounding downward
};

class ExactValue {
 public:
  // A zero.
  explicit ExactValue(ZeroSign zero = ZeroSign::positive);
  static ExactValue special(ExactKind kind);
  // (-1)^negative * magnitude * 2^exponent, magnitude in 32-bit limbs, least significant first.
  // A zero magnitude gives the zero `zero`.
  ExactValue(bool negative, std::vector<std::uint32_t> magnitude, int exponent,
             ZeroSign zero = ZeroSign::cancelled);

  ExactKind kind() const { return kind_; }
  bool is_zero() const { return kind_ == ExactKind::finite && magnitude_.empty(); }
  bool negative() const { return negative_; }
  // Limbs of the magnitude, least significant first, both end limbs nonzero (empty for zero).
  const std::vector<std::uint32_t>& magnitude() const { return magnitude_; }
  // The weight of the least significant limb's bit 0 is 2^exponent().
  int exponent() const { return exponent_; }

  // The correct rounding in format f.
  numeric::Rounded round(const numeric::Format& f, numeric::Rounding mode,
                         std::uint32_t random = 0) const;
  // The nearest binary64 (round to nearest even; +-inf beyond its range).
  double to_double() const;
  // The top 128 bits and a sticky bit, as round_window takes them. Finite values only.
  numeric::Window window() const;

  // Every digit: the decimal expansion of a dyadic rational is finite. Scientific notation with
  // trailing zeros removed, "1.25e-1"; "0", "-0", "inf", "-inf", "nan".
  std::string to_decimal() const;
  // C99 hex float with every bit, "0x1.8p-3" (as printf's %a writes a double); "0x0p+0" for zero.
  std::string to_hex() const;

 private:
  ExactKind kind_ = ExactKind::finite;
  bool negative_ = false;
  ZeroSign zero_ = ZeroSign::positive;
  std::vector<std::uint32_t> magnitude_;
  int exponent_ = 0;
};

}  // namespace ampbench::reference
