#include "harness/numeric/options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace ampbench::numeric {
namespace {

struct Named {
  std::string_view name;
  int index;
};

// Aliases map onto the index of formats::builtin.
constexpr Named kFormatNames[] = {
    {"fp64", 0},          {"float64", 0},  {"double", 0},   {"binary64", 0},
    {"fp32", 1},          {"float32", 1},  {"float", 1},    {"single", 1},
    {"binary32", 1},      {"tf32", 2},     {"bf16", 3},     {"bfloat16", 3},
    {"fp16", 4},          {"float16", 4},  {"half", 4},     {"binary16", 4},
    {"e4m3", 5},          {"fp8-e4m3", 5}, {"fp8e4m3", 5},  {"float8_e4m3fn", 5},
    {"e5m2", 6},          {"fp8-e5m2", 6}, {"fp8e5m2", 6},  {"float8_e5m2", 6},
    {"e3m2", 7},          {"fp6-e3m2", 7}, {"fp6e3m2", 7},  {"float6_e3m2fn", 7},
    {"e2m3", 8},          {"fp6-e2m3", 8}, {"fp6e2m3", 8},  {"float6_e2m3fn", 8},
    {"e2m1", 9},          {"fp4", 9},      {"fp4-e2m1", 9}, {"fp4e2m1", 9},
    {"float4_e2m1fn", 9},
};

// Aliases map onto the index of formats::scale_builtin.
constexpr Named kScaleFormatNames[] = {
    {"ue8m0", 0}, {"e8m0", 0}, {"float8_e8m0fnu", 0}, {"ue4m3", 1}, {"e4m3-scale", 1},
};

// A command-line name of an enumerator.
template <class T>
struct NamedValue {
  std::string_view name;
  T value;
};

constexpr NamedValue<SpecialEncoding> kSpecialsNames[] = {
    {"ieee", SpecialEncoding::ieee},
    {"single_nan", SpecialEncoding::single_nan},
    {"none", SpecialEncoding::none},
};

// `sr` is the usual meaning of stochastic rounding, the proportional variant.
constexpr NamedValue<Rounding> kModeNames[] = {
    {"rne", Rounding::nearest_even},
    {"rna", Rounding::nearest_away},
    {"rz", Rounding::toward_zero},
    {"ru", Rounding::upward},
    {"rd", Rounding::downward},
    {"rto", Rounding::to_odd},
    {"sr", Rounding::stochastic_proportional},
    {"srp", Rounding::stochastic_proportional},
    {"sre", Rounding::stochastic_equal},
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Double rounding of +, -, *, /, sqrt computed in a container of precision pc and then rounded to
// precision p is harmless when pc >= 2p + 2 (Figueroa, SIGNUM Newsletter 30(3), 1995).
void warn_double_rounding(const Format& f, int container_precision, std::string_view container,
                          Validation& v) {
  if (f.precision < container_precision && container_precision < 2 * f.precision + 2) {
    v.warnings.push_back(fmt::format(
        "double rounding possible: results computed in {} ({} bits) and then rounded to {} bits "
        "are correctly rounded only when {} >= 2*{}+2",
        container, container_precision, f.precision, container_precision, f.precision));
  }
}

}  // namespace

Validation validate(const RoundingOptions& options) {
  Validation v;
  const Format& f = options.format;
  if (f.precision < 1) {
    v.errors.push_back(fmt::format("precision {} must be at least 1", f.precision));
  } else if (f.precision < 2 && f.specials == SpecialEncoding::ieee) {
    v.errors.push_back("precision 1 leaves no fraction bit to tell NaN from infinity");
  }
  if (f.precision > 53) {
    v.errors.push_back(fmt::format(
        "precision {} exceeds binary64's 53 bits: values could not be held exactly", f.precision));
  }
  if (f.specials == SpecialEncoding::none && f.overflow != Overflow::saturate) {
    v.errors.push_back(
        "a format without infinity or NaN (specials=none) cannot overflow to either: its "
        "overflow must be saturate");
  }
  if (f.emin > f.emax) {
    v.errors.push_back(fmt::format("emin {} is greater than emax {}", f.emin, f.emax));
  }
  if (f.emax > 1023) {
    v.errors.push_back(fmt::format("emax {} exceeds binary64's 1023", f.emax));
  }
  if (f.precision >= 1 && f.emin - (f.precision - 1) < -1074) {
    v.errors.push_back(
        fmt::format("emin {} with precision {} reaches below binary64's smallest subnormal 2^-1074",
                    f.emin, f.precision));
  }
  if (v.errors.empty() && f.total_bits() > 64) {
    v.errors.push_back(
        fmt::format("the encoding needs {} bits; at most 64 are supported", f.total_bits()));
  }
  if (!v.errors.empty()) return v;

  if (options.container == Container::binary32) {
    if (f.precision > 24 || f.emax > 127 || f.emin - (f.precision - 1) < -149) {
      v.errors.push_back(fmt::format(
          "format {} (precision {}, emin {}, emax {}) does not fit the binary32 container", f.name,
          f.precision, f.emin, f.emax));
    } else {
      warn_double_rounding(f, 24, "binary32", v);
    }
  } else {
    warn_double_rounding(f, 53, "binary64", v);
  }
  return v;
}

std::optional<Format> format_from_name(std::string_view name) {
  const std::string key = lower(name);
  for (const auto& n : kFormatNames) {
    if (n.name == key) return formats::builtin[n.index];
  }
  return std::nullopt;
}

std::optional<ScaleFormat> scale_format_from_name(std::string_view name) {
  const std::string key = lower(name);
  for (const auto& n : kScaleFormatNames) {
    if (n.name == key) return formats::scale_builtin[n.index];
  }
  return std::nullopt;
}

std::string_view specials_name(SpecialEncoding specials) {
  for (const auto& n : kSpecialsNames) {
    if (n.value == specials) return n.name;
  }
  return "?";
}

FormatSpec parse_format(std::string_view spec) {
  if (auto builtin = format_from_name(spec)) return {builtin, {}};
  constexpr std::string_view kUser = "user:";
  if (lower(spec.substr(0, kUser.size())) != kUser) {
    return {std::nullopt,
            fmt::format("unknown format '{}' (known: {}, or user:p=P,emin=E,emax=E[,specials=S])",
                        spec, format_names())};
  }
  std::optional<int> p, emin, emax;
  std::optional<SpecialEncoding> specials;
  std::string_view rest = spec.substr(kUser.size());
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const std::size_t eq = item.find('=');
    const std::string key = lower(item.substr(0, eq));
    const std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (key == "specials") {
      if (specials.has_value()) {
        return {std::nullopt, fmt::format("format '{}': specials is given twice", spec)};
      }
      for (const auto& n : kSpecialsNames) {
        if (n.name == lower(value)) specials = n.value;
      }
      if (!specials) {
        return {
            std::nullopt,
            fmt::format("format '{}': specials '{}' is not ieee, single_nan or none", spec, value)};
      }
      continue;
    }
    // Base-10 digits with at most a leading '-': no blanks, no '+', nothing after.
    int number = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (value.empty() || error != std::errc() || end != value.data() + value.size()) {
      return {std::nullopt, fmt::format("format '{}': '{}' is not KEY=INTEGER", spec, item)};
    }
    std::optional<int>* slot = key == "p"      ? &p
                               : key == "emin" ? &emin
                               : key == "emax" ? &emax
                                               : nullptr;
    if (slot == nullptr) {
      return {std::nullopt,
              fmt::format("format '{}': unknown key '{}' (expected p, emin, emax, specials)", spec,
                          key)};
    }
    if (slot->has_value()) {
      return {std::nullopt, fmt::format("format '{}': {} is given twice", spec, key)};
    }
    *slot = number;
  }
  if (!p || !emin || !emax) {
    return {std::nullopt, fmt::format("format '{}': p, emin and emax are all required", spec)};
  }
  // Without infinity or NaN there is nothing to overflow to: such a format saturates.
  const SpecialEncoding encoding = specials.value_or(SpecialEncoding::ieee);
  return {user_format(*p, *emin, *emax, true,
                      encoding == SpecialEncoding::none ? Overflow::saturate : Overflow::infinity,
                      encoding),
          {}};
}

std::optional<Rounding> rounding_from_name(std::string_view name) {
  const std::string key = lower(name);
  for (const auto& n : kModeNames) {
    if (n.name == key) return n.value;
  }
  return std::nullopt;
}

RoundingSpec parse_rounding(std::string_view name) {
  if (const auto mode = rounding_from_name(name)) return {mode, {}};
  return {std::nullopt,
          fmt::format("unknown rounding mode '{}' (known: {})", name, rounding_names())};
}

std::string_view rounding_name(Rounding mode) {
  switch (mode) {
    case Rounding::nearest_even: return "rne";
    case Rounding::nearest_away: return "rna";
    case Rounding::toward_zero: return "rz";
    case Rounding::upward: return "ru";
    case Rounding::downward: return "rd";
    case Rounding::to_odd: return "rto";
    case Rounding::stochastic_proportional: return "srp";
    case Rounding::stochastic_equal: return "sre";
  }
  return "?";
}

std::string_view event_name(RoundingEvent event) {
  switch (event) {
    case RoundingEvent::exact: return "exact";
    case RoundingEvent::inexact: return "inexact";
    case RoundingEvent::underflow: return "underflow";
    case RoundingEvent::flush_to_zero: return "flush_to_zero";
    case RoundingEvent::overflow: return "overflow";
    case RoundingEvent::saturation: return "saturation";
    case RoundingEvent::nan: return "nan";
  }
  return "?";
}

std::string format_names() {
  std::string out;
  for (const auto& f : formats::builtin) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

std::string scale_format_names() {
  std::string out;
  for (const auto& f : formats::scale_builtin) {
    out += (out.empty() ? "" : ", ") + std::string(f.name);
  }
  return out;
}

std::string rounding_names() {
  std::string out;
  for (const auto& n : kModeNames) out += (out.empty() ? "" : ", ") + std::string(n.name);
  return out;
}

std::uint64_t EventCounts::total() const {
  std::uint64_t sum = 0;
  for (auto c : count) sum += c;
  return sum;
}

EventCounts& EventCounts::operator+=(const EventCounts& other) {
  for (int i = 0; i < kRoundingEventCount; ++i) count[i] += other.count[i];
  return *this;
}

}  // namespace ampbench::numeric
