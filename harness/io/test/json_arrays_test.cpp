// read_number_arrays: texts kept as written, and a message naming the place of every kind of bad
// input.
#include "harness/io/json_arrays.hpp"

#include <gtest/gtest.h>

#include <string_view>

namespace ampbench::io {
namespace {

constexpr std::string_view kNames[] = {"a", "b"};

std::string error_of(std::string_view text) {
  try {
    read_number_arrays(text, kNames);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ReadNumberArrays, KeepsTheTextOfEveryNumber) {
  const auto arrays = read_number_arrays(
      R"({"a": [0.1, 1.00048828125000000000000001, -3, 18446744073709551615],
          "b": ["0x1.8p-3", "inf", "-nan", 1e-400]})",
      kNames);
  EXPECT_EQ(arrays.at("a"), (std::vector<std::string>{"0.1", "1.00048828125000000000000001", "-3",
                                                      "18446744073709551615"}));
  EXPECT_EQ(arrays.at("b"), (std::vector<std::string>{"0x1.8p-3", "inf", "-nan", "1e-400"}));
  EXPECT_TRUE(read_number_arrays(R"({"b": [], "a": []})", kNames).at("a").empty());
}

TEST(ReadNumberArrays, ErrorsNameThePlace) {
  EXPECT_EQ(error_of(R"({"a": [1, 2], "b": [1, [2]]})"),
            "b[1]: expected a number or a hex-float string, got an array");
  EXPECT_EQ(error_of(R"({"a": [1, null]})"),
            "a[1]: expected a number or a hex-float string, got null");
  EXPECT_EQ(error_of(R"({"a": [1]})"), "missing member 'b'");
  EXPECT_EQ(error_of(R"({"a": [1], "b": [2], "c": [3]})"),
            "unknown member 'c' (expected 'a', 'b')");
  EXPECT_EQ(error_of(R"({"a": [1], "a": [2]})"), "member 'a' appears twice");
  EXPECT_EQ(error_of(R"({"a": 1, "b": [2]})"), "member 'a': expected an array, got a number");
  EXPECT_EQ(error_of(R"([1, 2])"), "expected an object with members 'a', 'b', got an array");
  EXPECT_EQ(error_of("{\"a\": [1,\n 2,, 3], \"b\": []}"),
            "line 2, column 4: syntax error while parsing value - unexpected ','; expected '[', "
            "'{', or a literal");
  EXPECT_EQ(error_of(""),
            "line 1, column 1: syntax error while parsing value - unexpected end of input; "
            "expected '[', '{', or a literal");
  // A number beyond binary64 cannot be held by the JSON library: said so, with the way out.
  EXPECT_EQ(error_of(R"({"a": [1e400], "b": []})"),
            "line 1, column 8: the number 1e400 is beyond the range of a binary64 (about 1.8e308); "
            "as a string, \"1e400\", it is rounded from its exact value");
  const std::string digits(1000, '1');
  EXPECT_EQ(error_of(R"({"a": [)" + digits + R"(], "b": []})"),
            "line 1, column 8: the number " + digits.substr(0, 60) +
                "… is beyond the range of a binary64 (about 1.8e308); as a string, \"" +
                digits.substr(0, 60) + "…\", it is rounded from its exact value");
}

}  // namespace
}  // namespace ampbench::io
