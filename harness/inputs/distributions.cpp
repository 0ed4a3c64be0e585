#include "harness/inputs/distributions.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include "harness/inputs/tensor_file.hpp"
#include "harness/io/number_text.hpp"

// The values must not depend on the platform: every operation below is a single IEEE 754 binary64
// operation (+ - * /, sqrt, frexp, ldexp), evaluated without excess precision and without fused
// multiply-adds (CMakeLists.txt builds this file with -ffp-contract=off).
static_assert(FLT_EVAL_METHOD == 0, "binary64 arithmetic with excess precision is not supported");
static_assert(std::numeric_limits<double>::is_iec559);

namespace ampbench::inputs {
namespace {

using numeric::Format;

struct KindName {
  std::string_view name;
  Kind kind;
};

// Canonical names first; the rest are aliases.
constexpr KindName kKinds[] = {
    {"normal", Kind::normal},
    {"uniform", Kind::uniform},
    {"loguniform", Kind::loguniform},
    {"near-overflow", Kind::near_overflow},
    {"subnormal", Kind::subnormal},
    {"cancel", Kind::cancel},
    {"relu", Kind::relu},
    {"constant", Kind::constant},
    {"file", Kind::file},
    {"log-uniform", Kind::loguniform},
    {"near_overflow", Kind::near_overflow},
    {"subnormals", Kind::subnormal},
    {"cancellation", Kind::cancel},
    {"const", Kind::constant},
};
constexpr int kCanonicalKinds = 9;

// The parameters each distribution takes, in canonical order.
std::span<const std::string_view> params_of(Kind kind) {
  static constexpr std::string_view normal[] = {"mu", "sigma"};
  static constexpr std::string_view uniform[] = {"a", "b"};
  static constexpr std::string_view loguniform[] = {"emin", "emax"};
  static constexpr std::string_view near_overflow[] = {"factor"};
  static constexpr std::string_view subnormal[] = {"fraction"};
  static constexpr std::string_view cancel[] = {"eps", "spread"};
  static constexpr std::string_view constant[] = {"value"};
  switch (kind) {
    case Kind::normal:
    case Kind::relu: return normal;
    case Kind::uniform: return uniform;
    case Kind::loguniform: return loguniform;
    case Kind::near_overflow: return near_overflow;
    case Kind::subnormal: return subnormal;
    case Kind::cancel: return cancel;
    case Kind::constant: return constant;
    case Kind::file: break;
  }
  return {};
}

std::string join(std::span<const std::string_view> names) {
  std::string s;
  for (const auto n : names) s += fmt::format("{}{}", s.empty() ? "" : ", ", n);
  return s;
}

[[noreturn]] void fail(std::string_view spec, std::string_view what) {
  throw SpecError(fmt::format("input spec '{}': {}", spec, what));
}

double parse_real(std::string_view spec, std::string_view key, std::string_view text) {
  const auto parsed = io::parse_number(text, numeric::formats::fp64);
  if (!parsed) fail(spec, fmt::format("{}={} is not a number", key, text));
  const double v = parsed->rounded.value;
  if (!std::isfinite(v)) fail(spec, fmt::format("{}={} must be finite", key, text));
  return v;
}

int parse_int(std::string_view spec, std::string_view key, std::string_view text) {
  int v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (!text.empty() && *first == '+') ++first;
  const auto [end, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || end != last || first == last) {
    fail(spec, fmt::format("{}={} is not an integer", key, text));
  }
  return v;
}

// Checks the parameters' ranges; `spec` is the text for messages.
void check(const Spec& s, std::string_view spec) {
  switch (s.kind) {
    case Kind::normal:
    case Kind::relu:
      if (s.sigma < 0) fail(spec, fmt::format("sigma must be >= 0 (got {})", s.sigma));
      break;
    case Kind::uniform:
      if (s.a > s.b) fail(spec, fmt::format("a must be <= b (got a={}, b={})", s.a, s.b));
      if (!std::isfinite(s.b - s.a)) {
        fail(spec, fmt::format("b - a overflows binary64 (a={}, b={})", s.a, s.b));
      }
      break;
    case Kind::loguniform:
      for (const auto& [key, e] : {std::pair{"emin", s.emin}, std::pair{"emax", s.emax}}) {
        if (e && (*e < -1022 || *e > 1023)) {
          fail(spec,
               fmt::format("{}={} is outside binary64's normal exponents [-1022, 1023]", key, *e));
        }
      }
      if (s.emin && s.emax && *s.emin > *s.emax) {
        fail(spec, fmt::format("emin must be <= emax (got emin={}, emax={})", *s.emin, *s.emax));
      }
      break;
    case Kind::near_overflow:
      if (s.factor < 1) fail(spec, fmt::format("factor must be >= 1 (got {})", s.factor));
      break;
    case Kind::subnormal:
      if (s.fraction < 0 || s.fraction > 1) {
        fail(spec, fmt::format("fraction must be in [0, 1] (got {})", s.fraction));
      }
      break;
    case Kind::cancel:
      if (s.eps && (*s.eps < 0 || *s.eps > 1)) {
        fail(spec, fmt::format("eps must be in [0, 1] (got {})", *s.eps));
      }
      if (s.spread < 0 || s.spread > 1000) {
        fail(spec, fmt::format("spread must be in [0, 1000] (got {})", s.spread));
      }
      break;
    case Kind::constant:
      if (!io::parse_number(s.value, numeric::formats::fp64)) {
        fail(spec, fmt::format("value={} is not a number", s.value));
      }
      break;
    case Kind::file:
      if (s.path.empty()) fail(spec, "file: needs a path (file:PATH)");
      break;
  }
}

// floor(n * (top 32 bits of d) / 2^32): an integer in [0, n) for n <= 2^31, each with probability
// within n / 2^32 of 1/n.
std::uint64_t below(std::uint64_t d, std::uint64_t n) {
  return ((d >> 32) * n) >> 32;
}

// (1 + f 2^-52) 2^e with the 52 bits f of a draw: uniform in the binade [2^e, 2^(e+1)).
double binade_value(std::uint64_t d, int e) {
  return std::ldexp(1.0 + static_cast<double>(d >> 12) * 0x1p-52, e);
}

double with_sign(std::uint64_t d, double magnitude) {
  return (d & 1) ? -magnitude : magnitude;
}

}  // namespace

std::size_t element_count(std::span<const std::size_t> shape) {
  std::size_t n = 1;
  for (const std::size_t d : shape) {
    if (d != 0 && n > std::numeric_limits<std::size_t>::max() / d) {
      throw io::InputError(fmt::format("shape {} has too many elements", shape_string(shape)));
    }
    n *= d;
  }
  return n;
}

std::string shape_string(std::span<const std::size_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

void RoundingReport::add(bool input_is_nan, const numeric::Rounded& r) {
  using numeric::RoundingEvent;
  events.add(r.event);
  switch (r.event) {
    case RoundingEvent::exact: break;
    case RoundingEvent::nan:
      if (!input_is_nan) ++changed;
      break;
    case RoundingEvent::flush_to_zero:
      ++flushed;
      ++changed;
      break;
    case RoundingEvent::overflow:
    case RoundingEvent::saturation:
      ++overflowed;
      ++changed;
      break;
    case RoundingEvent::inexact:
    case RoundingEvent::underflow: ++changed; break;
  }
}

RoundingReport& RoundingReport::operator+=(const RoundingReport& other) {
  events += other.events;
  changed += other.changed;
  flushed += other.flushed;
  overflowed += other.overflowed;
  return *this;
}

std::string RoundingReport::summary() const {
  return fmt::format("{} values: {} changed by rounding, {} flushed to zero, {} overflowed",
                     total(), changed, flushed, overflowed);
}

std::string_view kind_name(Kind kind) {
  for (int i = 0; i < kCanonicalKinds; ++i) {
    if (kKinds[i].kind == kind) return kKinds[i].name;
  }
  return "?";
}

std::string known_kinds() {
  std::string s;
  for (int i = 0; i < kCanonicalKinds; ++i) {
    s += fmt::format("{}{}", s.empty() ? "" : ", ", kKinds[i].name);
  }
  return s;
}

Spec parse_spec(std::string_view text) {
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  const std::string_view rest =
      colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  Spec s;
  bool found = false;
  for (const auto& k : kKinds) {
    if (k.name == name) {
      s.kind = k.kind;
      found = true;
    }
  }
  if (name.empty()) fail(text, fmt::format("no distribution named (known: {})", known_kinds()));
  if (!found) {
    fail(text, fmt::format("unknown distribution '{}' (known: {})", name, known_kinds()));
  }
  if (s.kind == Kind::file) {
    s.path = std::string(rest);
    check(s, text);
    return s;
  }
  if (colon != std::string_view::npos && rest.empty()) {
    fail(text, "nothing after ':' (write the name alone for the defaults)");
  }

  const auto allowed = params_of(s.kind);
  std::vector<std::string_view> seen;
  std::size_t pos = 0;
  while (colon != std::string_view::npos && pos <= rest.size()) {
    const std::size_t comma = std::min(rest.find(',', pos), rest.size());
    const std::string_view item = rest.substr(pos, comma - pos);
    pos = comma + 1;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      fail(text, fmt::format("'{}' is not of the form name=value", item));
    }
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      fail(text, allowed.empty() ? fmt::format("unknown parameter '{}' ({} takes none)", key, name)
                                 : fmt::format("unknown parameter '{}' ({} takes {})", key,
                                               kind_name(s.kind), join(allowed)));
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      fail(text, fmt::format("parameter '{}' given twice", key));
    }
    seen.push_back(key);
    if (value.empty()) fail(text, fmt::format("{}= has no value", key));
    if (key == "mu") s.mu = parse_real(text, key, value);
    if (key == "sigma") s.sigma = parse_real(text, key, value);
    if (key == "a") s.a = parse_real(text, key, value);
    if (key == "b") s.b = parse_real(text, key, value);
    if (key == "emin") s.emin = parse_int(text, key, value);
    if (key == "emax") s.emax = parse_int(text, key, value);
    if (key == "factor") s.factor = parse_real(text, key, value);
    if (key == "fraction") s.fraction = parse_real(text, key, value);
    if (key == "eps") s.eps = parse_real(text, key, value);
    if (key == "spread") s.spread = parse_int(text, key, value);
    if (key == "value") s.value = std::string(value);
  }
  check(s, text);
  return s;
}

std::string to_string(const Spec& s) {
  std::string params;
  const auto add = [&](std::string_view key, const auto& v) {
    params += fmt::format("{}{}={}", params.empty() ? "" : ",", key, v);
  };
  switch (s.kind) {
    case Kind::normal:
    case Kind::relu:
      add("mu", s.mu);
      add("sigma", s.sigma);
      break;
    case Kind::uniform:
      add("a", s.a);
      add("b", s.b);
      break;
    case Kind::loguniform:
      if (s.emin) add("emin", *s.emin);
      if (s.emax) add("emax", *s.emax);
      break;
    case Kind::near_overflow: add("factor", s.factor); break;
    case Kind::subnormal: add("fraction", s.fraction); break;
    case Kind::cancel:
      if (s.eps) add("eps", *s.eps);
      add("spread", s.spread);
      break;
    case Kind::constant: add("value", s.value); break;
    case Kind::file: return fmt::format("file:{}", s.path);
  }
  return params.empty() ? std::string(kind_name(s.kind))
                        : fmt::format("{}:{}", kind_name(s.kind), params);
}

Spec resolve(const Spec& spec, const Format& f) {
  Spec s = spec;
  const std::string text = to_string(spec);
  check(s, text);
  switch (s.kind) {
    case Kind::loguniform:
      if (!s.emin) s.emin = std::max(-1022, f.emin - f.fraction_bits() - 2);
      if (!s.emax) s.emax = std::min(1023, f.emax + 1);
      if (*s.emin > *s.emax) {
        fail(text, fmt::format("emin must be <= emax (got emin={}, emax={} for {})", *s.emin,
                               *s.emax, f.name));
      }
      break;
    case Kind::subnormal:
      if (!f.subnormals) fail(text, fmt::format("format {} has no subnormals", f.name));
      break;
    case Kind::cancel:
      if (!s.eps) s.eps = std::ldexp(1.0, 1 - f.precision);
      break;
    default: break;
  }
  return s;
}

// ln x = k ln 2 + 2 atanh(s), x = m 2^k with m in [sqrt(1/2), sqrt(2)), s = (m - 1) / (m + 1),
// |s| <= 0.1716; the atanh series to s^23 leaves a truncation error below 2^-60 relative.
double det_log(double x) {
  int k = 0;
  double m = std::frexp(x, &k);    // x = m 2^k, m in [0.5, 1)
  if (m < 0x1.6a09e667f3bcdp-1) {  // sqrt(1/2) rounded
    m *= 2;
    --k;
  }
  const double s = (m - 1) / (m + 1);
  const double s2 = s * s;
  // 1/(2j+1) for j = 11 down to 1, Horner.
  constexpr double kInv[] = {1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13,
                             1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3};
  double p = 0;
  for (const double c : kInv) p = (p + c) * s2;
  // ln 2 = kLn2Hi + kLn2Lo (fdlibm's split): kLn2Hi has 32 significant bits, so k * kLn2Hi is
  // exact for |k| < 2^21.
  constexpr double kLn2Hi = 0x1.62e42feep-1;
  constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
  const double kd = static_cast<double>(k);
  return kd * kLn2Hi + (kd * kLn2Lo + (2 * s + 2 * s * p));
}

namespace {

// sin and cos of b = (pi/2) w for w in [0, 1/2] (b <= pi/4): Taylor series to b^19 and b^18,
// truncation error below 2^-62.
double sin_quarter(double w) {
  const double b = 0x1.921fb54442d18p0 * w;  // pi/2 rounded
  const double b2 = b * b;
  double p = 0;
  for (int n = 19; n >= 3; n -= 2) p = (p + 1) * (-b2 / (n * (n - 1)));
  return b + b * p;
}
double cos_quarter(double w) {
  const double b = 0x1.921fb54442d18p0 * w;
  const double b2 = b * b;
  double p = 0;
  for (int n = 18; n >= 2; n -= 2) p = (p + 1) * (-b2 / (n * (n - 1)));
  return 1 + p;
}

}  // namespace

// u = (q + w) / 4 with the quadrant q in {0, 1, 2, 3} and w in [0, 1), both exact; then cos of
// (pi/2)(q + w) by symmetry from sin or cos of an angle in [0, pi/4].
double det_cos_2pi(double u) {
  const double v = 4 * u;
  const double qd = std::floor(v);
  const double w = v - qd;
  const int q = static_cast<int>(qd) & 3;
  // c = cos((pi/2) w), s = sin((pi/2) w)
  const double c = w <= 0.5 ? cos_quarter(w) : sin_quarter(1 - w);
  const double s = w <= 0.5 ? sin_quarter(w) : cos_quarter(1 - w);
  switch (q) {
    case 0: return c;
    case 1: return -s;
    case 2: return -c;
    default: return s;
  }
}

double standard_normal(double u1, double u2) {
  return std::sqrt(-2 * det_log(1 - u1)) * det_cos_2pi(u2);
}

double sample(const Spec& s, const Format& f, std::uint64_t seed, std::uint64_t i) {
  switch (s.kind) {
    case Kind::normal:
    case Kind::relu: {
      const double z =
          standard_normal(unit_double(draw(seed, i, 0)), unit_double(draw(seed, i, 1)));
      const double x = s.mu + s.sigma * z;
      return s.kind == Kind::relu ? (x > 0 ? x : 0.0) : x;
    }
    case Kind::uniform: return s.a + (s.b - s.a) * unit_double(draw(seed, i, 0));
    case Kind::loguniform: {
      const int e1 = s.emin.value_or(-1022);
      const int e2 = s.emax.value_or(1023);
      const auto n = static_cast<std::uint64_t>(e2 - e1 + 1);
      const int e = e1 + static_cast<int>(below(draw(seed, i, 0), n));
      const std::uint64_t d1 = draw(seed, i, 1);
      return with_sign(d1, binade_value(d1, e));
    }
    case Kind::near_overflow: {
      const double max = numeric::decode(f, numeric::detail::max_finite_bits(f));
      const double c = 1 - 1 / s.factor;
      return with_sign(draw(seed, i, 1), max * (1 - c * unit_double(draw(seed, i, 0))));
    }
    case Kind::subnormal: {
      const int t = f.fraction_bits();
      const std::uint64_t d2 = draw(seed, i, 2);
      std::uint64_t k;  // the value is k 2^(emin - t)
      if (unit_double(draw(seed, i, 0)) < s.fraction) {
        const int b = static_cast<int>(below(draw(seed, i, 1), static_cast<std::uint64_t>(t)));
        k = (std::uint64_t{1} << b) | (d2 & ((std::uint64_t{1} << b) - 1));
      } else {
        k = (std::uint64_t{1} << t) | (d2 & ((std::uint64_t{1} << t) - 1));
      }
      return with_sign(draw(seed, i, 3), std::ldexp(static_cast<double>(k), f.emin - t));
    }
    case Kind::cancel: {
      const std::uint64_t first = i & ~std::uint64_t{1};  // the pair's draws are its first's
      const auto n = static_cast<std::uint64_t>(2 * s.spread + 1);
      const int e = -s.spread + static_cast<int>(below(draw(seed, first, 0), n));
      const double m = binade_value(draw(seed, first, 1), e);
      const double delta = s.eps.value_or(0) * (2 * unit_double(draw(seed, first, 2)) - 1);
      const std::uint64_t d3 = draw(seed, first, 3);
      const bool swapped = (d3 & 1) != 0;
      const double sign = (d3 & 2) ? -1.0 : 1.0;
      const bool partner = ((i & 1) != 0) != swapped;
      return partner ? -sign * (m * (1 + delta)) : sign * m;
    }
    case Kind::constant: {
      const auto parsed = io::parse_number(s.value, numeric::formats::fp64);
      return parsed ? parsed->rounded.value : std::numeric_limits<double>::quiet_NaN();
    }
    case Kind::file: break;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::uint64_t conversion_stream(std::uint64_t seed) {
  return numeric::splitmix64(seed, std::uint64_t{3} << 61);
}

Generated generate(const Spec& spec, std::span<const std::size_t> shape, const Format& f,
                   std::uint64_t seed, numeric::Rounding mode) {
  const std::size_t n = element_count(shape);
  const Conversion conversion(f, mode, conversion_stream(seed));
  if (spec.kind == Kind::file) {
    Loaded loaded = read_tensor_file(spec.path, conversion);
    check_shape(loaded.tensor, shape, spec.path);
    return Generated{std::move(loaded.tensor), loaded.report};
  }
  const Spec s = resolve(spec, f);
  Generated g;
  g.tensor.shape.assign(shape.begin(), shape.end());
  g.tensor.format = f;
  g.tensor.source = to_string(s);
  g.tensor.seed = seed;
  g.tensor.data.resize(n);
  if (s.kind == Kind::constant) {
    // Rounded from the text's exact value, never through a binary64 (each element with its own
    // draw in a stochastic mode).
    for (std::size_t i = 0; i < n; ++i) {
      const auto parsed = io::parse_number(s.value, f, mode, conversion.draw(i));
      g.tensor.data[i] = parsed->rounded.value;
      g.report.add(std::isnan(parsed->rounded.value) && parsed->exact, parsed->rounded);
    }
    return g;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const double x = sample(s, f, seed, i);
    const numeric::Rounded r = numeric::round_to(f, mode, x, conversion.draw(i));
    g.tensor.data[i] = r.value;
    g.report.add(std::isnan(x), r);
  }
  return g;
}

Generated generate(std::string_view spec, std::span<const std::size_t> shape, const Format& f,
                   std::uint64_t seed, numeric::Rounding mode) {
  return generate(parse_spec(spec), shape, f, seed, mode);
}

}  // namespace ampbench::inputs
