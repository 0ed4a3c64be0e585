#include "harness/numeric/test/test_support.hpp"

#include <cpuid.h>
#include <fmt/format.h>
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <ostream>
#include <random>

#include "harness/numeric/options.hpp"
#include "harness/numeric/test/mpfr_oracle.hpp"

namespace ampbench::numeric {
void PrintTo(RoundingEvent event, std::ostream* os) {
  *os << event_name(event);
}
void PrintTo(Rounding mode, std::ostream* os) {
  *os << rounding_name(mode);
}
void PrintTo(const Format& format, std::ostream* os) {
  *os << test::describe(format);
}
}  // namespace ampbench::numeric

namespace ampbench::numeric::test {

std::uint64_t bits_of(double x) {
  return std::bit_cast<std::uint64_t>(x);
}
double double_of(std::uint64_t bits) {
  return std::bit_cast<double>(bits);
}
std::uint32_t bits_of(float x) {
  return std::bit_cast<std::uint32_t>(x);
}
float float_of(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}

bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b);
}

Format variant(const Format& f, bool subnormals, Overflow overflow) {
  Format v = f;
  v.subnormals = subnormals;
  v.overflow = overflow;
  return v;
}

std::vector<Format> variants(const Format& f) {
  std::vector<Format> out;
  for (const bool subnormals : {true, false}) {
    for (const Overflow overflow : {Overflow::infinity, Overflow::saturate}) {
      if (!f.has_nan() && overflow == Overflow::infinity) continue;
      out.push_back(variant(f, subnormals, overflow));
    }
  }
  return out;
}

std::string describe(const Format& f) {
  return fmt::format("{}(p={}, emin={}, emax={}, subnormals={}, overflow={}, specials={})", f.name,
                     f.precision, f.emin, f.emax, f.subnormals ? "on" : "off",
                     f.overflow == Overflow::saturate ? "saturate" : "infinity",
                     specials_name(f.specials));
}

std::string describe(double x) {
  return fmt::format("{:a} (bits 0x{:016x})", x, bits_of(x));
}

std::string describe(float x) {
  return fmt::format("{:a}f (bits 0x{:08x})", x, bits_of(x));
}

std::string fmt_bits(std::uint64_t bits) {
  return fmt::format("0x{:x}", bits);
}

int special_field(const Format& f) {
  // Field 0 holds zeros and subnormals, fields 1 .. emax - emin + 1 the binades; IEEE-style
  // encodings put infinities and NaNs in the next one, e4m3 its NaN in the top binade's field;
  // the MX FP6/FP4 formats have no special field, and their top binade's is the widest.
  return f.specials == SpecialEncoding::ieee ? f.emax - f.emin + 2 : f.emax - f.emin + 1;
}

int exponent_field_bits(const Format& f) {
  int bits = 0;
  while ((1 << bits) <= special_field(f)) ++bits;
  return bits;
}

std::uint64_t expected_nan_bits(const Format& f, double x) {
  const int t = f.precision - 1;
  const int w = exponent_field_bits(f);
  const std::uint64_t sign = std::signbit(x) ? std::uint64_t{1} << (t + w) : 0;
  const std::uint64_t field = static_cast<std::uint64_t>(special_field(f)) << t;
  // No NaN at all: +max finite, whatever x's sign (NVIDIA's cvt .satfinite).
  if (f.specials == SpecialEncoding::none) return field | ((std::uint64_t{1} << t) - 1);
  if (f.specials == SpecialEncoding::single_nan)
    return sign | field | ((std::uint64_t{1} << t) - 1);
  const std::uint64_t payload =
      std::isnan(x) ? (bits_of(x) & ((std::uint64_t{1} << 52) - 1)) >> (52 - t) : 0;
  return sign | field | (std::uint64_t{1} << (t - 1)) | payload;
}

std::vector<float> floats_near_range(const Format& f, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int lowest = std::max(f.emin - f.precision - 2, -149);
  const int highest = std::min(f.emax + 2, 127);
  std::vector<float> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int e =
        lowest + static_cast<int>(rng() % static_cast<std::uint64_t>(highest - lowest + 1));
    std::uint64_t fraction = rng() & 0x7FFFFFu;
    if (i % 8 == 0 && f.precision < 23) fraction &= ~((std::uint64_t{1} << (23 - f.precision)) - 1);
    const double x = std::ldexp(1.0 + std::ldexp(static_cast<double>(fraction), -23), e);
    out.push_back(static_cast<float>((rng() & 1) != 0 ? -x : x));
  }
  return out;
}

namespace {

// Whether the event reported with result v is possible for input x, from the definitions in
// rounding.hpp alone (which event applies can need the oracle: saturation vs. inexact at max).
bool event_possible(const oracle::Spec& s, double x, double v, RoundingEvent event) {
  const double normal = std::ldexp(1.0, s.emin);
  const bool finite = std::isfinite(x);
  switch (event) {
    case RoundingEvent::exact: return same(v, x);
    case RoundingEvent::inexact:
      return finite && v != x && v != 0 && std::fabs(x) >= normal && std::fabs(v) <= s.max_finite;
    case RoundingEvent::underflow: return finite && v != x && v != 0 && std::fabs(x) < normal;
    case RoundingEvent::flush_to_zero: return finite && x != 0 && v == 0;
    case RoundingEvent::overflow:
      return finite && std::fabs(x) > s.max_finite &&
             (std::isinf(v) || (std::isnan(v) && !s.has_infinity));
    case RoundingEvent::saturation:
      return !std::isnan(x) && std::fabs(x) > s.max_finite && std::fabs(v) == s.max_finite;
    case RoundingEvent::nan:
      if (!s.has_nan) return std::isnan(x) && v == s.max_finite;
      return std::isnan(v) && (std::isnan(x) || (std::isinf(x) && !s.has_infinity));
  }
  return false;
}

}  // namespace

std::optional<std::string> check_round_to(const Format& f, Rounding mode, double x,
                                          std::uint32_t random) {
  const Rounded got = round_to(f, mode, x, random);
  const oracle::Result want = oracle::round(oracle::spec_of(f), mode, x, random);
  const auto fail = [&](const std::string& what) {
    return fmt::format(
        "{}: {} x={} random=0x{:08x}: {}; round_to gave bits=0x{:x} value={} "
        "event={}; oracle value={} event={}",
        describe(f), rounding_name(mode), describe(x), random, what, got.bits, describe(got.value),
        event_name(got.event), describe(want.value), event_name(want.event));
  };
  if (!same(got.value, want.value)) return fail("value differs from the oracle");
  if (!event_possible(oracle::spec_of(f), x, got.value, got.event)) {
    return fail("event contradicts its definition");
  }
  if (got.event != want.event) return fail("event differs from the oracle");
  const int total = 1 + exponent_field_bits(f) + f.precision - 1;
  if (total < 64 && (got.bits >> total) != 0) return fail("bits above the format's width");
  if (!same(decode(f, got.bits), got.value)) return fail("decode(bits) differs from value");
  const std::uint64_t sign_bit = std::uint64_t{1} << (total - 1);
  const bool sign_kept = f.has_nan() || !std::isnan(x);  // NaN to +max where there is no NaN
  if (sign_kept && ((got.bits & sign_bit) != 0) != std::signbit(x)) {
    return fail("sign bit differs from x's");
  }
  if ((std::isnan(want.value) || want.event == RoundingEvent::nan) &&
      got.bits != expected_nan_bits(f, x)) {
    return fail(fmt::format("NaN encoding: expected 0x{:x}", expected_nan_bits(f, x)));
  }
  const std::uint64_t magnitude = got.bits & ~sign_bit;
  if (!f.subnormals && magnitude != 0 && magnitude < (std::uint64_t{1} << (f.precision - 1))) {
    return fail("subnormal pattern although subnormals are off");
  }
  return std::nullopt;
}

bool has_f16c() {
  // CPUID leaf 1 read directly (clang 14's __builtin_cpu_supports knows no "f16c"): F16C (ECX bit
  // 29), and the OS saving the AVX state (OSXSAVE, then XCR0's SSE and AVX bits), without which
  // the VEX-encoded conversions fault, as GCC's builtin checks too.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & bit_F16C) == 0 ||
      (ecx & bit_OSXSAVE) == 0) {
    return false;
  }
  unsigned xcr0 = 0, high = 0;
  __asm__("xgetbv" : "=a"(xcr0), "=d"(high) : "c"(0));
  return (xcr0 & 6u) == 6u;
}

[[gnu::target("f16c")]] std::uint16_t f16c_encode(float x, Rounding mode) {
  switch (mode) {
    case Rounding::toward_zero: return _cvtss_sh(x, _MM_FROUND_TO_ZERO);
    case Rounding::upward: return _cvtss_sh(x, _MM_FROUND_TO_POS_INF);
    case Rounding::downward: return _cvtss_sh(x, _MM_FROUND_TO_NEG_INF);
    default: return _cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT);
  }
}

[[gnu::target("f16c")]] float f16c_decode(std::uint16_t h) {
  return _cvtsh_ss(h);
}

}  // namespace ampbench::numeric::test
