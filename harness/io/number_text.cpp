#include "harness/io/number_text.hpp"

#include <gmp.h>
#include <mpfr.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

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

}  // namespace

std::optional<ParsedNumber> parse_number(std::string_view text, const numeric::Format& f,
                                         numeric::Rounding mode, std::uint32_t random) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  const std::string copy(text);
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
