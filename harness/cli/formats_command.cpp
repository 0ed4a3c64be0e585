#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "harness/cli/commands.hpp"
#include "harness/numeric/format.hpp"
#include "harness/numeric/options.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::cli {
namespace {

using numeric::Format;

// The characteristic values of a format, all exact binary64 values.
struct Characteristics {
  double unit_roundoff;  // 2^-p: the bound on relative error of round-to-nearest
  double min_subnormal;  // 0 when the format has no subnormals
  double min_normal;     // 2^emin
  double max_finite;
  double overflow_threshold;  // |x| at which round-to-nearest-even starts to overflow; inf when
                              // binary64 cannot hold it (fp64: 2^1024 - 2^970)
  std::string overflow_threshold_exact;  // the same as an exact expression
  bool threshold_overflows;  // whether |x| == overflow_threshold itself overflows (a tie that
                             // goes away from max, whose last bit is odd)
};

// Powers of two as 2^k (exact and easy to check), other values with 9 significant digits (enough
// to tell binary32 neighbours apart).
std::string show(double x) {
  if (x == 0) return "-";
  int e = 0;
  if (std::frexp(x, &e) == 0.5) return fmt::format("2^{}", e - 1);
  return fmt::format("{:.9g}", x);
}

Characteristics characteristics(const Format& f) {
  const int t = f.fraction_bits();
  const double max_finite = numeric::decode(f, numeric::detail::max_finite_bits(f));
  const double half_quantum = std::ldexp(1.0, f.emax - t - 1);
  return {std::ldexp(1.0, -f.precision),
          f.subnormals ? std::ldexp(1.0, f.emin - t) : 0.0,
          std::ldexp(1.0, f.emin),
          max_finite,
          max_finite + half_quantum,
          f.specials != numeric::SpecialEncoding::single_nan
              ? fmt::format("2^{} - 2^{}", f.emax + 1, f.emax - f.precision)
              : fmt::format("2^{} - 2^{} + 2^{}", f.emax + 1, f.emax + 2 - f.precision,
                            f.emax - f.precision),
          (f.max_significand() & 1) != 0};
}

std::string hex(double x) {
  return fmt::format("{:a}", x);
}

// What the format's special patterns are, for the table.
std::string specials_text(const Format& f) {
  switch (f.specials) {
    case numeric::SpecialEncoding::ieee: return "inf, nan";
    case numeric::SpecialEncoding::single_nan: return "nan only (S.1111.111)";
    case numeric::SpecialEncoding::none: return "none (all finite; saturates)";
  }
  return "?";
}

double smallest_scale(const numeric::ScaleFormat& s) {
  return numeric::decode_scale(s, s.kind == numeric::ScaleKind::e8m0 ? 0x00 : 0x01);
}

double largest_scale(const numeric::ScaleFormat& s) {
  return numeric::decode_scale(s, s.kind == numeric::ScaleKind::e8m0 ? 0xFE : 0x7E);
}

std::uint64_t scale_nan_pattern(const numeric::ScaleFormat& s) {
  return s.kind == numeric::ScaleKind::e8m0 ? 0xFF : 0x7F;
}

}  // namespace

int run_formats(bool json, std::ostream& out) {
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const Format& f : numeric::formats::builtin) {
      const Characteristics c = characteristics(f);
      list.push_back({
          {"name", f.name},
          {"bits", f.total_bits()},
          {"exponent_bits", f.exponent_bits()},
          {"precision", f.precision},
          {"emin", f.emin},
          {"emax", f.emax},
          {"subnormals", f.subnormals},
          {"kind", "element"},
          {"infinity", f.has_infinity()},
          {"nan", f.has_nan()},
          {"specials", numeric::specials_name(f.specials)},
          {"overflow", f.overflow == numeric::Overflow::saturate ? "saturate" : "infinity"},
          {"unit_roundoff", c.unit_roundoff},
          {"min_subnormal", c.min_subnormal},
          {"min_normal", c.min_normal},
          {"max_finite", c.max_finite},
          {"overflow_threshold", std::isinf(c.overflow_threshold)
                                     ? nlohmann::json(nullptr)
                                     : nlohmann::json(c.overflow_threshold)},
          {"overflow_threshold_exact", c.overflow_threshold_exact},
          {"overflow_threshold_inclusive", c.threshold_overflows},
          {"hex",
           {{"unit_roundoff", hex(c.unit_roundoff)},
            {"min_subnormal", hex(c.min_subnormal)},
            {"min_normal", hex(c.min_normal)},
            {"max_finite", hex(c.max_finite)},
            {"overflow_threshold", std::isinf(c.overflow_threshold)
                                       ? nlohmann::json(nullptr)
                                       : nlohmann::json(hex(c.overflow_threshold))}}},
      });
    }
    for (const numeric::ScaleFormat& s : numeric::formats::scale_builtin) {
      list.push_back({
          {"name", s.name},
          {"kind", "scale"},
          {"bits", s.bits},
          {"signed", false},
          {"zero", s.kind != numeric::ScaleKind::e8m0},
          {"min_positive", smallest_scale(s)},
          {"max_finite", largest_scale(s)},
          {"nan_pattern", fmt::format("0x{:02x}", scale_nan_pattern(s))},
          {"hex",
           {{"min_positive", hex(smallest_scale(s))}, {"max_finite", hex(largest_scale(s))}}},
      });
    }
    out << list.dump(2) << '\n';
    return kExitOk;
  }
  constexpr const char* kRow = "{:<6}{:>5}{:>4}{:>7}{:>6}{:>8}{:>13}{:>12}{:>17}{:>24}  {}\n";
  out << fmt::format(kRow, "format", "bits", "p", "emin", "emax", "u", "min subnorm", "min normal",
                     "max finite", "RNE overflow at", "specials");
  for (const Format& f : numeric::formats::builtin) {
    const Characteristics c = characteristics(f);
    const std::string threshold =
        f.overflow == numeric::Overflow::saturate
            ? std::string("(saturates)")
            : (c.threshold_overflows ? ">= " : "> ") + (std::isinf(c.overflow_threshold)
                                                            ? c.overflow_threshold_exact
                                                            : show(c.overflow_threshold));
    out << fmt::format(kRow, f.name, f.total_bits(), f.precision, f.emin, f.emax,
                       show(c.unit_roundoff), show(c.min_subnormal), show(c.min_normal),
                       show(c.max_finite), threshold, specials_text(f));
  }
  out << "\nu = 2^-p is the unit roundoff of round-to-nearest. Under round-to-nearest-even, |x| "
         "past 'RNE overflow at'\nbecomes infinity (NaN in e4m3, which has none); e3m2, e2m3 "
         "and e2m1 (OCP MX FP6/FP4) have neither\nand saturate to +-max. 'ampbench formats "
         "--json' gives exact values.\n";
  constexpr const char* kScaleRow = "{:<8}{:>5}{:>12}{:>12}{:>7}{:>6}  {}\n";
  out << '\n'
      << fmt::format(kScaleRow, "scale", "bits", "smallest", "largest", "zero", "NaN", "values");
  for (const numeric::ScaleFormat& s : numeric::formats::scale_builtin) {
    out << fmt::format(kScaleRow, s.name, s.bits, show(smallest_scale(s)), show(largest_scale(s)),
                       s.kind == numeric::ScaleKind::e8m0 ? "no" : "yes",
                       fmt::format("0x{:02x}", scale_nan_pattern(s)),
                       s.kind == numeric::ScaleKind::e8m0
                           ? "powers of two 2^(field - 127), unsigned (OCP MX E8M0)"
                           : "e4m3's non-negative values, sign bit 0 (NVFP4 block scale)");
  }
  return kExitOk;
}

}  // namespace ampbench::cli
