// Format plus rounding in one value, validated once; names as they appear on the command line.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::numeric {

// The type that holds values of the format between operations when an op is emulated.
enum class Container : std::uint8_t { binary32, binary64 };

struct RoundingOptions {
  Format format = formats::fp32;
  Rounding mode = Rounding::nearest_even;
  std::uint64_t seed = 0;  // stochastic modes: element i of a stream uses stochastic_draw(seed, i)
  Container container = Container::binary64;
};

// Errors make the options unusable; warnings say what may be inexact about using them.
struct Validation {
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  bool ok() const { return errors.empty(); }
};

Validation validate(const RoundingOptions& options);

// Command-line names. Formats: fp64 fp32 tf32 bf16 fp16 e4m3 e5m2 e3m2 e2m3 e2m1 and aliases
// (double, float, half, bfloat16, fp8-e4m3, fp4, float6_e3m2fn, ...). Scale formats: ue8m0 ue4m3
// (e8m0, float8_e8m0fnu). Modes: rne rna rz ru rd rto sr srp sre.
std::optional<Format> format_from_name(std::string_view name);
std::optional<ScaleFormat> scale_format_from_name(std::string_view name);
std::string_view specials_name(SpecialEncoding specials);  // "ieee", "single_nan", "none"

// A built-in name, or a user format "user:p=P,emin=E,emax=E[,specials=S]" (subnormals on; S is
// ieee (the default: infinities, overflow to infinity), single_nan (OCP e4m3's encoding: no
// infinity, one NaN per sign, overflow to NaN) or none (every pattern finite; overflow
// saturates); change subnormals and overflow on the returned value). On failure `format` is empty
// and `error` says why.
struct FormatSpec {
  std::optional<Format> format;
  std::string error;
};
FormatSpec parse_format(std::string_view spec);
std::optional<Rounding> rounding_from_name(std::string_view name);
// A mode's name; on failure `mode` is empty and `error` says why ("unknown rounding mode 'x'
// (known: rne, ...)").
struct RoundingSpec {
  std::optional<Rounding> mode;
  std::string error;
};
RoundingSpec parse_rounding(std::string_view name);
std::string_view rounding_name(Rounding mode);  // the short command-line name, e.g. "rne"
std::string_view event_name(RoundingEvent event);
std::string format_names();        // "fp64, fp32, ..." for messages
std::string rounding_names();      // "rne, rna, ..." for messages
std::string scale_format_names();  // "ue8m0, ue4m3" for messages

// Counts of rounding events, indexed by RoundingEvent.
struct EventCounts {
  std::array<std::uint64_t, kRoundingEventCount> count{};
  void add(RoundingEvent event) { ++count[static_cast<int>(event)]; }
  std::uint64_t operator[](RoundingEvent event) const { return count[static_cast<int>(event)]; }
  std::uint64_t total() const;
  EventCounts& operator+=(const EventCounts& other);
};

}  // namespace ampbench::numeric
