// Numbers written as text, as users give them on the command line and in input files: decimal,
// C99 hex float ("0x1.8p-3"), inf, -inf or nan. Each is rounded correctly from its exact value to
// the format it is read into: "0.1" read as fp16 is the fp16 nearest to one tenth, never the fp16
// nearest to the binary64 nearest to one tenth (the two differ when the double lands on an fp16
// midpoint).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::io {

struct ParsedNumber {
  numeric::Rounded rounded;  // the text's value rounded to the format
  bool exact;                // the text's value is a value of the format (rounded.value == it)
};

// Empty when the text is not entirely a number (surrounding blanks are not allowed). `random` is
// the stochastic modes' draw (numeric::round_to). A NaN keeps the sign and payload C's strtod
// reads ("-nan", "nan(0x1)").
std::optional<ParsedNumber> parse_number(std::string_view text, const numeric::Format& f,
                                         numeric::Rounding mode = numeric::Rounding::nearest_even,
                                         std::uint32_t random = 0);

}  // namespace ampbench::io
