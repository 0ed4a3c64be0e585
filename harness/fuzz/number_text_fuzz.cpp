// Fuzz target: numbers as text (io::parse_number, harness/io/number_text.hpp). The first byte
// chooses the format (its high bits) and the rounding mode (its low three bits); the rest is the
// text. parse_number reports bad text by an empty result and never throws.
//
// Invariants of an accepted text: the result is a value of the format (rounding it again is exact
// and gives the same bits); `exact` only with an exact rounding event; and in binary64 and
// binary32 with a non-stochastic mode that the C library also has, the same value as glibc's
// strtod/strtof (which round correctly in the current rounding mode) whenever they too read the
// whole text.
#include <cfenv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "harness/fuzz/fuzz.hpp"
#include "harness/io/number_text.hpp"
#include "harness/numeric/rounding.hpp"

namespace {

using namespace ampbench;
using numeric::Rounding;
using numeric::RoundingEvent;

// The built-in formats and two user formats: a narrow one with saturation and no subnormals.
const numeric::Format kFormats[] = {
    numeric::formats::fp64, numeric::formats::fp32,
    numeric::formats::tf32, numeric::formats::bf16,
    numeric::formats::fp16, numeric::formats::e4m3,
    numeric::formats::e5m2, numeric::user_format(5, -6, 7, false, numeric::Overflow::saturate),
};

// The C library's rounding direction for a mode, or -1 when it has none.
int c_rounding(Rounding mode) {
  switch (mode) {
    case Rounding::nearest_even: return FE_TONEAREST;
    case Rounding::toward_zero: return FE_TOWARDZERO;
    case Rounding::upward: return FE_UPWARD;
    case Rounding::downward: return FE_DOWNWARD;
    default: return -1;
  }
}

// glibc's reading of the whole text in `mode`, or nothing when it stops early.
template <class T>
bool c_library_value(const std::string& text, int direction, double* out) {
  char* end = nullptr;
  std::fesetround(direction);
  T v;
  if constexpr (std::is_same_v<T, double>) {
    v = std::strtod(text.c_str(), &end);
  } else {
    v = std::strtof(text.c_str(), &end);
  }
  std::fesetround(FE_TONEAREST);
  if (end != text.c_str() + text.size()) return false;
  *out = static_cast<double>(v);
  return true;
}

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t format_index = (data[0] >> 3) % std::size(kFormats);
  const numeric::Format& f = kFormats[format_index];
  const auto mode = static_cast<Rounding>(data[0] & 7);
  const std::string text(fuzz::text(data + 1, size - 1));

  const auto parsed = io::parse_number(text, f, mode);
  if (!parsed) return 0;
  const numeric::Rounded& r = parsed->rounded;
  const std::string what = "'" + text + "' in " + f.name;

  if (parsed->exact) {
    fuzz::check(r.event == RoundingEvent::exact || r.event == RoundingEvent::nan,
                what + ": exact, but the rounding event is not");
  }
  if (std::isnan(r.value)) {
    // NaN for a NaN, or for an overflow in a format without infinity (e4m3).
    fuzz::check(r.event == RoundingEvent::nan || r.event == RoundingEvent::overflow,
                what + ": NaN without the nan or overflow event");
  } else {
    const numeric::Rounded again = numeric::round_to(f, Rounding::nearest_even, r.value);
    fuzz::check(again.event == RoundingEvent::exact && again.bits == r.bits,
                what + ": the result is not a value of the format");
  }

  const int direction = c_rounding(mode);
  if (direction < 0 || format_index > 1) return 0;
  double expected = 0;
  const bool c_reads = format_index == 0 ? c_library_value<double>(text, direction, &expected)
                                         : c_library_value<float>(text, direction, &expected);
  if (c_reads) {
    fuzz::check(same_value(r.value, expected),
                what + ": differs from the C library's correctly rounded value");
  }
  return 0;
}
