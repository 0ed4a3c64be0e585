// Tensors read from files: NumPy .npy (format versions 1.0, 2.0 and 3.0; little- or big-endian
// float16, float32, float64; C order) and JSON (a nested row-major list of numbers or number
// strings, or an object of such lists). Every value is rounded from its exact value to the
// requested format (in the conversion's mode: nearest-even unless asked) and counted in a
// RoundingReport. Malformed files throw
// io::InputError naming the file and what is wrong; they never crash. docs/inputs.md describes both
// formats.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/inputs/distributions.hpp"
#include "harness/numeric/format.hpp"

namespace ampbench::inputs {

struct Loaded {
  Tensor tensor;
  RoundingReport report;
};

// Binary64 values, a row-major tensor of `shape`, each rounded to the conversion's format (element
// i with its draw i) as a file's values are; `source` says where they came from.
Loaded convert(std::vector<std::size_t> shape, std::span<const double> values,
               const Conversion& conversion, std::string source);

// A .npy file's bytes; `name` (the file's path) starts every error message.
Loaded parse_npy(std::span<const std::byte> bytes, const Conversion& conversion,
                 std::string_view name);
Loaded read_npy(const std::filesystem::path& path, const Conversion& conversion);

// JSON text whose top level is one tensor: a number (shape []) or a nested list, rectangular.
// Elements are JSON numbers or strings holding a decimal, a hex float, inf, -inf or nan; each
// text is rounded correctly to the conversion's format (io::parse_number). Errors are "NAME: PLACE:
// what", the place written as $[i][j] (e.g. "x.json: $[3]: expected 5 elements, got 4").
Loaded parse_json_tensor(std::string_view text, const Conversion& conversion,
                         std::string_view name);
// JSON text whose top level is an object of tensors, {"a": [[...]], "b": [...]}; places are written
// a[i][j]. Every member is read.
std::map<std::string, Loaded> parse_json_tensors(std::string_view text,
                                                 const Conversion& conversion,
                                                 std::string_view name);
Loaded read_json_tensor(const std::filesystem::path& path, const Conversion& conversion);

// By extension: PATH.npy, PATH.json (one tensor), or PATH.json#member (one member of an object).
Loaded read_tensor_file(std::string_view path, const Conversion& conversion);
// The file read_tensor_file reads for `path`: PATH of PATH.json#member, otherwise `path`.
std::string tensor_file_path(std::string_view path);

// Throws io::InputError "WHAT: shape [2, 3] does not match the expected [3, 2]" unless equal.
void check_shape(const Tensor& tensor, std::span<const std::size_t> expected,
                 std::string_view what);

}  // namespace ampbench::inputs
