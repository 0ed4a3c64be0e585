// Helpers shared by the numeric tests: the lists of modes and format variants, bit-level
// comparison of doubles, and the check of one round_to call against the MPFR oracle.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::numeric {
// How GoogleTest prints the enums in failure messages ("overflow" rather than "1-byte object").
void PrintTo(RoundingEvent event, std::ostream* os);
void PrintTo(Rounding mode, std::ostream* os);
void PrintTo(const Format& format, std::ostream* os);
}  // namespace ampbench::numeric

namespace ampbench::numeric::test {

inline constexpr Rounding kAllModes[] = {
    Rounding::nearest_even,
    Rounding::nearest_away,
    Rounding::toward_zero,
    Rounding::upward,
    Rounding::downward,
    Rounding::to_odd,
    Rounding::stochastic_proportional,
    Rounding::stochastic_equal,
};

// A mode with the stochastic draw it is called with.
struct Draw {
  Rounding mode;
  std::uint32_t random;
};

// The deterministic modes, and the stochastic ones with draws at the ends and around the middle.
inline constexpr Draw kDraws[] = {
    {Rounding::nearest_even, 0},
    {Rounding::nearest_away, 0},
    {Rounding::toward_zero, 0},
    {Rounding::upward, 0},
    {Rounding::downward, 0},
    {Rounding::to_odd, 0},
    {Rounding::stochastic_proportional, 0},
    {Rounding::stochastic_proportional, 0x7FFFFFFFu},
    {Rounding::stochastic_proportional, 0x80000000u},
    {Rounding::stochastic_proportional, 0xFFFFFFFFu},
    {Rounding::stochastic_equal, 0x7FFFFFFFu},
    {Rounding::stochastic_equal, 0x80000000u},
};

std::uint64_t bits_of(double x);
double double_of(std::uint64_t bits);
std::uint32_t bits_of(float x);
float float_of(std::uint32_t bits);

// Equal bit patterns, or both NaN.
bool same(double a, double b);

// The format with subnormals and overflow policy replaced.
Format variant(const Format& f, bool subnormals, Overflow overflow);
// The four variants (subnormals on/off x infinity/saturate) of f; two (saturate only) for a
// format without infinity or NaN, which cannot overflow to either.
std::vector<Format> variants(const Format& f);

// Human-readable descriptions for failure messages.
std::string describe(const Format& f);
std::string describe(double x);  // "%a (bits 0x...)"
std::string describe(float x);
std::string fmt_bits(std::uint64_t bits);  // "0x..."

// The exponent field of infinities and NaNs (IEEE-style: the one above the top binade, all ones
// in the IEEE formats) or of e4m3's NaN (the top binade's), and the width of the exponent field
// that holds it, counted here rather than taken from format.hpp. The exhaustive tests check both
// against the published encodings of the built-in formats.
int special_field(const Format& f);
int exponent_field_bits(const Format& f);

// The encoding a NaN result must have: for IEEE-style formats a quiet NaN with x's sign and the
// top fraction bits of x's payload (x NaN) or the default quiet NaN (x not NaN); for e4m3 the one
// NaN pattern S.1111.111; for a format without NaN (e2m1, ...) the pattern of +max finite.
std::uint64_t expected_nan_bits(const Format& f, double x);

// n binary32 numbers with random signs and fractions, their exponents uniform over the format's
// range and a little beyond; every eighth has at most p + 1 significant bits (exact, or a tie).
// The x86 F16C conversions, an independent hardware peer for fp16. Call only when has_f16c().
bool has_f16c();
std::uint16_t f16c_encode(float x, Rounding mode = Rounding::nearest_even);  // rne, rz, ru, rd
float f16c_decode(std::uint16_t h);

std::vector<float> floats_near_range(const Format& f, std::size_t n, std::uint64_t seed);

// Rounds x with round_to and checks everything it returns against the oracle: the value (bit for
// bit, zeros' signs included), the event, decode(bits) == value, the sign bit, the NaN encoding,
// no subnormal patterns when subnormals are off, no bits above total_bits(). Returns a
// description of the first mismatch.
std::optional<std::string> check_round_to(const Format& f, Rounding mode, double x,
                                          std::uint32_t random);

}  // namespace ampbench::numeric::test
