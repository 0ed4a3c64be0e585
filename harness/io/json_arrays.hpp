// Named arrays of numbers in a JSON object, {"a": [1, "0x1.8p-3", ...], "b": [...]}, read with
// every number's text kept as written: "0.1" or "1e-400" must reach parse_number (number_text.hpp)
// undamaged, not as the binary64 a JSON library would round it to.
#pragma once

#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ampbench::io {

// Bad input; the message names the place (line and column, or the member and index) and what is
// wrong with it.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a message about a JSON number beyond binary64 adds where numbers are read from their text
// (the JSON library cannot hold it as a number): "; as a string, "1e400", it is rounded from its
// exact value".
std::string as_string_hint(std::string_view number);

// The texts of the elements of each required member, by name. Elements are JSON numbers or
// strings (a hex float, a decimal, inf, -inf, nan); the members must be exactly `names`.
std::map<std::string, std::vector<std::string>> read_number_arrays(
    std::string_view json, std::span<const std::string_view> names);

}  // namespace ampbench::io
