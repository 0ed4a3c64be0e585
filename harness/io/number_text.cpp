#include "harness/io/number_text.hpp"

#include <gmp.h>
#include <mpfr.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

namespace ampbench::io {
namespace {

// The text's value truncated to 128 bits is the window's significand, and whether anything was
// cut off its sticky bit: exactly what round_window needs to round the exact value correctly.
constexpr mpfr_prec_t kWindowBits = 128;

class Number {
 public:
  Number() { mpfr_init2(value_, kWindowBits); }
  ~Number() { mpfr_clear(value_); }
  Number(const Number&) = delete;
  Number& operator=(const Number&) = delete;
  mpfr_ptr get() { return value_; }

 private:
  mpfr_t value_;
};

numeric::Window window_of(mpfr_ptr v, bool truncated) {
  const bool negative = mpfr_signbit(v) != 0;
  mpz_t z;
  mpz_init(z);
  const mpfr_exp_t e = mpfr_get_z_2exp(z, v);  // |v| = |z| * 2^e, |z| < 2^128 with its top bit set
  std::uint64_t words[2] = {0, 0};
  std::size_t count = 0;
  mpz_export(words, &count, -1, sizeof words[0], 0, 0, z);  // least significant word first
  mpz_clear(z);
  return numeric::Window{negative, words[1], words[0], truncated, static_cast<int>(e + 64)};
}

// MPFR 4.2 computes a text's binary exponent in a `long` and wraps when the written exponent is
// near that type's range: "0.001e-9223372036854775807" reads as MPFR's largest number, with the
// overflow flag. An exponent of 10^15 or more in magnitude is replaced by 10^15 with its sign:
// for any text shorter than 10^14 characters both values lie as far beyond MPFR's range (and every
// format's) on the same side, so the reading is unchanged, and no `long` arithmetic can wrap. The
// exponent is the run of decimal digits ending the text, after an optional sign and the marker of
// the text's base: e, E or @ in decimal, p, P or @ after a 0x or 0b prefix. A text MPFR would
// refuse stays refused: digits are replaced by digits.
constexpr std::string_view kExponentCap = "1000000000000000";

void cap_exponent(std::string& text) {
  std::size_t digits = text.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(text[digits - 1]))) --digits;
  if (digits == text.size() || digits == 0) return;
  std::size_t marker = digits - 1;
  if ((text[marker] == '+' || text[marker] == '-') && marker > 0) --marker;
  const std::size_t body = text[0] == '+' || text[0] == '-' ? 1 : 0;
  const bool prefixed = text.size() > body + 1 && text[body] == '0' &&
                        std::string_view("xXbB").find(text[body + 1]) != std::string_view::npos;
  const std::string_view markers = prefixed ? "pP@" : "eE@";
  if (markers.find(text[marker]) == std::string_view::npos) return;
  std::size_t first = digits;
  while (first + 1 < text.size() && text[first] == '0') ++first;
  if (text.size() - first <= kExponentCap.size() - 1) return;
  text.replace(digits, std::string::npos, kExponentCap);
}

}  // namespace

std::optional<ParsedNumber> parse_number(std::string_view text, const numeric::Format& f,
                                         numeric::Rounding mode, std::uint32_t random) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  std::string copy(text);
  cap_exponent(copy);
  Number v;
  char* end = nullptr;
  mpfr_clear_flags();
  const int ternary = mpfr_strtofr(v.get(), copy.c_str(), &end, 0, MPFR_RNDZ);
  if (end != copy.c_str() + copy.size()) return std::nullopt;

  if (mpfr_nan_p(v.get())) {
    // MPFR keeps no sign or payload of a NaN: strtod's reading of the same text does.
    const double nan = std::strtod(copy.c_str(), nullptr);
    return ParsedNumber{
        numeric::round_to(f, mode,
                          std::isnan(nan) ? nan : std::numeric_limits<double>::quiet_NaN()),
        true};
  }
  if (mpfr_inf_p(v.get()) || mpfr_zero_p(v.get())) {
    const double special = mpfr_inf_p(v.get()) ? std::numeric_limits<double>::infinity() : 0.0;
    const auto r = numeric::round_to(f, mode, mpfr_signbit(v.get()) ? -special : special, random);
    if (!mpfr_underflow_p()) return ParsedNumber{r, r.event == numeric::RoundingEvent::exact};
    // Below MPFR's range (|x| < 2^(2^30)): tiny but not zero, which rounding must know.
    const numeric::Window tiny{mpfr_signbit(v.get()) != 0, std::uint64_t{1} << 63, 0, true,
                               static_cast<int>(mpfr_get_emin()) - 64};
    return ParsedNumber{numeric::round_window(f, mode, tiny, random), false};
  }
  // Above MPFR's range, truncation gave its largest number and a nonzero ternary: still beyond
  // every format's, so the window rounds it as the overflow it is.
  const numeric::Rounded r =
      numeric::round_window(f, mode, window_of(v.get(), ternary != 0), random);
  return ParsedNumber{r, ternary == 0 && r.event == numeric::RoundingEvent::exact};
}

}  // namespace ampbench::io
