// Seeded input tensors for the per-op precision audit: distributions whose element i depends only
// on (seed, i), on every platform, whatever the chunking or thread count; rounding of the values to
// the input format with a count of what that rounding did. docs/inputs.md defines every
// distribution exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/io/json_arrays.hpp"
#include "harness/numeric/format.hpp"
#include "harness/numeric/options.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::inputs {

// A tensor of values of `format`, row-major (C order), each held exactly in a double.
struct Tensor {
  std::vector<std::size_t> shape;  // empty: a scalar (one element)
  std::vector<double> data;        // size() == product of shape
  numeric::Format format = numeric::formats::fp32;
  // Where the values came from: the canonical spec with every parameter explicit (to_string of the
  // resolved Spec), or "file:PATH". With `seed` and `shape` it replays the tensor bit for bit.
  std::string source;
  std::optional<std::uint64_t> seed;  // set for generated tensors, empty for files

  std::size_t size() const { return data.size(); }
};

// The number of elements of a shape (1 for the empty shape); throws io::InputError on overflow.
std::size_t element_count(std::span<const std::size_t> shape);
std::string shape_string(std::span<const std::size_t> shape);  // "[2, 3]"

// How values become values of a tensor's format: the format, the rounding mode (a policy's
// input_mode) and, for the stochastic modes, the stream of draws: element i (row-major) rounds with
// numeric::stochastic_draw(stream, i). From a format alone: nearest-even.
struct Conversion {
  Conversion(const numeric::Format& f,  // NOLINT(google-explicit-constructor): a format converts
             numeric::Rounding m = numeric::Rounding::nearest_even, std::uint64_t s = 0)
      : format(f), mode(m), stream(s) {}
  numeric::Format format;
  numeric::Rounding mode;
  std::uint64_t stream;

  std::uint32_t draw(std::uint64_t index) const {
    return numeric::is_stochastic(mode) ? numeric::stochastic_draw(stream, index) : 0u;
  }
};

// The stream of a generated tensor's stochastic conversion: apart from every draw of its values
// (positions 4 i + j) and from the operands' seeds (2^63 + k).
std::uint64_t conversion_stream(std::uint64_t seed);

// What rounding the inputs to the tensor's format did, one round_to per element.
struct RoundingReport {
  numeric::EventCounts events;   // by RoundingEvent
  std::uint64_t changed = 0;     // the value differs from the exact input (a NaN staying NaN does
                                 // not count; an infinity that becomes NaN does)
  std::uint64_t flushed = 0;     // a nonzero input became zero (RoundingEvent::flush_to_zero)
  std::uint64_t overflowed = 0;  // beyond the range: to inf or NaN (overflow) or to +-max
                                 // (saturation)

  // Counts one element: `input` the exact value (NaN for a NaN input), `r` its rounding.
  void add(bool input_is_nan, const numeric::Rounded& r);
  RoundingReport& operator+=(const RoundingReport& other);
  std::uint64_t total() const { return events.total(); }
  std::string summary() const;  // "1000 values: 12 changed by rounding, 3 flushed, 2 overflowed"
};

// A bad distribution spec; the message quotes the spec and says what is wrong.
class SpecError : public io::InputError {
 public:
  using io::InputError::InputError;
};

enum class Kind : std::uint8_t {
  normal,         // mu + sigma * z, z standard normal (Box-Muller)
  uniform,        // a + (b - a) * u
  loguniform,     // random sign, binary exponent uniform in [emin, emax], significand in [1, 2)
  near_overflow,  // random sign, magnitude uniform in (max / factor, max] of the format
  subnormal,      // random sign; with probability `fraction` a subnormal of the format, else a
                  // normal of the lowest binade
  cancel,         // pairs (m, -m(1 + delta)) in random order and sign: sums near zero
  relu,           // max(+0, normal(mu, sigma))
  constant,       // `value` everywhere
  file,           // read from `path` (.npy or .json)
};

// A parsed spec. Parameters not given keep these defaults; those left empty depend on the format
// and are filled by `resolve`.
struct Spec {
  Kind kind = Kind::normal;
  double mu = 0, sigma = 1;       // normal, relu
  double a = -1, b = 1;           // uniform
  std::optional<int> emin, emax;  // loguniform; default: emin - fraction_bits - 2 and emax + 1 of
                                  // the format, clamped to [-1022, 1023]
  double factor = 2;              // near-overflow
  double fraction = 0.9;          // subnormal
  std::optional<double> eps;      // cancel; default: the format's epsilon 2^(1-p)
  int spread = 4;                 // cancel: magnitudes' exponents uniform in [-spread, spread]
  std::string value = "1";        // constant: the text, rounded straight to the format
  std::string path;               // file: PATH, or PATH.json#member

  friend bool operator==(const Spec&, const Spec&) = default;
};

// "normal", "normal:mu=0,sigma=2", "uniform:a=-1,b=1", "loguniform:emin=-30,emax=10",
// "near-overflow:factor=4", "subnormal:fraction=0.9", "cancel:eps=1e-3,spread=4",
// "relu:mu=0,sigma=1", "constant:value=0.1", "file:PATH". Numbers: decimal, hex float
// ("0x1p-3"); throws SpecError.
Spec parse_spec(std::string_view text);
// The canonical text: the name and every parameter that is set, numbers in shortest round-trip
// form. parse_spec(to_string(s)) == s.
std::string to_string(const Spec& spec);
std::string_view kind_name(Kind kind);
std::string known_kinds();  // "normal, uniform, ..." for messages

// The spec with the format-dependent defaults filled in, checked against the format (the
// subnormal distribution needs a format with subnormals); throws SpecError.
Spec resolve(const Spec& spec, const numeric::Format& format);

// Draw j (0..3) of element i: numeric::splitmix64(seed, 4 * i + j).
inline std::uint64_t draw(std::uint64_t seed, std::uint64_t index, int j) {
  return numeric::splitmix64(seed, 4 * index + static_cast<std::uint64_t>(j));
}
// The top 53 bits of a draw as a double in [0, 1): (d >> 11) * 2^-53, exact.
inline double unit_double(std::uint64_t d) {
  return static_cast<double>(d >> 11) * 0x1p-53;
}
// A seed for operand `k` of a case seeded `seed`, so that operands are not drawn from one stream:
// splitmix64(seed, 2^63 + k).
inline std::uint64_t operand_seed(std::uint64_t seed, std::uint64_t k) {
  return numeric::splitmix64(seed, (std::uint64_t{1} << 63) + k);
}

// Element `index` of the distribution before rounding to the format, as a binary64. `spec` must be
// resolved against `format`; not for constant (whose text is rounded straight to the format) or
// file specs.
double sample(const Spec& resolved, const numeric::Format& format, std::uint64_t seed,
              std::uint64_t index);

// The platform-independent elementary functions the normal distribution uses (+ - * / and sqrt
// only; see docs/inputs.md), exposed for the tests.
double det_log(double x);                      // natural logarithm, x finite and > 0
double det_cos_2pi(double u);                  // cos(2 pi u), u in [0, 1) a multiple of 2^-53
double standard_normal(double u1, double u2);  // sqrt(-2 ln(1 - u1)) cos(2 pi u2)

struct Generated {
  Tensor tensor;
  RoundingReport report;
};

// Values of the distribution, each rounded to `format` in `mode` (stochastic modes: draws of the
// stream conversion_stream(seed)) and counted. A file spec reads the file (its stochastic draws:
// the same stream) and checks that its shape equals `shape`. Throws SpecError or io::InputError.
Generated generate(const Spec& spec, std::span<const std::size_t> shape,
                   const numeric::Format& format, std::uint64_t seed,
                   numeric::Rounding mode = numeric::Rounding::nearest_even);
Generated generate(std::string_view spec, std::span<const std::size_t> shape,
                   const numeric::Format& format, std::uint64_t seed,
                   numeric::Rounding mode = numeric::Rounding::nearest_even);

}  // namespace ampbench::inputs
