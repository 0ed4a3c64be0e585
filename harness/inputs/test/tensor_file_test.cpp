// Tensor files: .npy files written here byte by byte (float16/32/64, little- and big-endian,
// format versions 1.0, 2.0, 3.0) read back exactly; every malformed-file error; JSON nested lists
// with their rectangularity errors.
#include "harness/inputs/tensor_file.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "harness/io/test/temp_file.hpp"

namespace ampbench::inputs {
namespace {

namespace formats = numeric::formats;
using numeric::RoundingEvent;

// ---- writing .npy files by hand ---------------------------------------------------------------

// magic, version, header length (2 bytes in 1.0, 4 in 2.0 and 3.0), the dict padded with spaces
// and a newline so that the data starts at a multiple of 64, then the data.
std::string npy(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t n = header.size();
  out += static_cast<char>(n & 0xFF);
  out += static_cast<char>((n >> 8) & 0xFF);
  if (major != 1) {
    out += static_cast<char>((n >> 16) & 0xFF);
    out += static_cast<char>((n >> 24) & 0xFF);
  }
  return out + header + data;
}

std::string dict(std::string_view descr, std::string_view shape, bool fortran = false) {
  return fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}", descr,
                     fortran ? "True" : "False", shape);
}

// The low `bytes` bytes of each pattern, little-endian (or big-endian).
std::string data(const std::vector<std::uint64_t>& patterns, int bytes, bool big = false) {
  std::string out;
  for (const std::uint64_t p : patterns) {
    for (int k = 0; k < bytes; ++k) {
      const int shift = 8 * (big ? bytes - 1 - k : k);
      out += static_cast<char>((p >> shift) & 0xFF);
    }
  }
  return out;
}

std::uint64_t bits64(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
std::uint64_t bits32(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

Loaded parse(const std::string& bytes, const numeric::Format& f = formats::fp64) {
  return parse_npy(std::as_bytes(std::span(bytes.data(), bytes.size())), f, "t.npy");
}

std::string npy_error(const std::string& bytes) {
  try {
    parse(bytes);
  } catch (const io::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::uint64_t> f64_bits(const std::vector<double>& v) {
  std::vector<std::uint64_t> out;
  for (const double x : v) out.push_back(bits64(x));
  return out;
}

using ampbench::test::temp_file;

// ---- .npy reading ---------------------------------------------------------------------------

TEST(Json, TheConversionRoundsInTheModeAsked) {
  // 1 + 2^-11 is a tie between two tf32 values: to nearest even it is 1, upward 1 + 2^-10.
  const std::string text = R"(["0x1.002p0", 1, "-0x1.002p0"])";
  const auto rne = parse_json_tensor(text, formats::tf32, "x.json");
  const auto up =
      parse_json_tensor(text, Conversion(formats::tf32, numeric::Rounding::upward), "x.json");
  EXPECT_EQ(rne.tensor.data, (std::vector<double>{1, 1, -1}));
  EXPECT_EQ(up.tensor.data, (std::vector<double>{1 + 0x1p-10, 1, -1}));
  EXPECT_EQ(up.report.changed, 2u);
}

TEST(Npy, Float16ReadsBackExactly) {
  // 1, -2, 65504 (max), 2^-24 (smallest subnormal), 2^-14 - 2^-24 (largest subnormal), -0, -inf,
  // 0.333 (0x3555)
  const std::vector<std::uint64_t> h = {0x3C00, 0xC000, 0x7BFF, 0x0001,
                                        0x03FF, 0x8000, 0xFC00, 0x3555};
  for (const int major : {1, 2, 3}) {
    const Loaded l = parse(npy(dict("<f2", "(2, 4)"), data(h, 2), major), formats::fp16);
    EXPECT_EQ(l.tensor.shape, (std::vector<std::size_t>{2, 4}));
    ASSERT_EQ(l.tensor.size(), 8u);
    for (std::size_t i = 0; i < h.size(); ++i) {
      EXPECT_EQ(bits64(l.tensor.data[i]), bits64(numeric::decode(formats::fp16, h[i]))) << i;
    }
    EXPECT_EQ(l.report.changed, 0u);
    EXPECT_EQ(l.report.events[RoundingEvent::exact], 8u);
  }
  // A NaN stays NaN and is not counted as changed.
  const Loaded nan = parse(npy(dict("<f2", "(1,)"), data({0x7E00}, 2)), formats::fp16);
  EXPECT_TRUE(std::isnan(nan.tensor.data[0]));
  EXPECT_EQ(nan.report.changed, 0u);
}

TEST(Npy, Float32AndFloat64ReadBackExactly) {
  const std::vector<float> f = {1.5f, -0x1.fffffep127f, 0x1p-149f, 0.1f, -0.0f};
  std::vector<std::uint64_t> fb;
  for (const float x : f) fb.push_back(bits32(x));
  const Loaded l32 = parse(npy(dict("<f4", "(5,)"), data(fb, 4), 2), formats::fp32);
  for (std::size_t i = 0; i < f.size(); ++i) EXPECT_EQ(bits64(l32.tensor.data[i]), bits64(f[i]));
  EXPECT_EQ(l32.report.changed, 0u);

  const std::vector<double> d = {0.1,
                                 -1e-310,
                                 std::numeric_limits<double>::max(),
                                 0x1p-1074,
                                 std::numeric_limits<double>::infinity(),
                                 3.0};
  const Loaded l64 = parse(npy(dict("<f8", "(3, 2)"), data(f64_bits(d), 8)));
  EXPECT_EQ(f64_bits(l64.tensor.data), f64_bits(d));
  EXPECT_EQ(l64.tensor.shape, (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(l64.report.changed, 0u);

  // Big-endian files too.
  const Loaded big = parse(npy(dict(">f8", "(3, 2)"), data(f64_bits(d), 8, true)));
  EXPECT_EQ(f64_bits(big.tensor.data), f64_bits(d));
  const Loaded big16 = parse(npy(dict(">f2", "(1,)"), data({0x3C00}, 2, true)), formats::fp16);
  EXPECT_EQ(big16.tensor.data[0], 1.0);
}

TEST(Npy, ScalarAndEmptyShapes) {
  const Loaded scalar = parse(npy(dict("<f8", "()"), data(f64_bits({2.5}), 8)));
  EXPECT_TRUE(scalar.tensor.shape.empty());
  EXPECT_EQ(scalar.tensor.data, std::vector<double>{2.5});
  const Loaded empty = parse(npy(dict("<f4", "(3, 0)"), ""));
  EXPECT_EQ(empty.tensor.shape, (std::vector<std::size_t>{3, 0}));
  EXPECT_EQ(empty.tensor.size(), 0u);
  // Python 2 long literals and double quotes.
  const Loaded py2 = parse(npy("{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (1L,)}",
                               data(f64_bits({1.0}), 8)));
  EXPECT_EQ(py2.tensor.data, std::vector<double>{1.0});
}

TEST(Npy, ValuesAreRoundedToTheRequestedFormatAndCounted) {
  // float32 70000 overflows fp16; 1e-10 flushes; 0.1f is inexact; 2^-20 is an fp16 subnormal
  // (exact); 1 exact.
  std::vector<std::uint64_t> fb;
  for (const float x : {70000.0f, 1e-10f, 0.1f, 0x1p-20f, 1.0f}) fb.push_back(bits32(x));
  const Loaded l = parse(npy(dict("<f4", "(5,)"), data(fb, 4)), formats::fp16);
  EXPECT_EQ(l.tensor.data[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(l.tensor.data[1], 0.0);
  EXPECT_EQ(l.tensor.data[2], 0x1.998p-4);  // 0.1f = 0x1.99999ap-4 -> fp16 nearest
  EXPECT_EQ(l.tensor.data[3], 0x1p-20);
  EXPECT_EQ(l.report.overflowed, 1u);
  EXPECT_EQ(l.report.flushed, 1u);
  EXPECT_EQ(l.report.changed, 3u);
  EXPECT_EQ(l.report.events[RoundingEvent::exact], 2u);
  EXPECT_STREQ(l.tensor.format.name, "fp16");
  EXPECT_EQ(l.tensor.source, "file:t.npy");
  EXPECT_FALSE(l.tensor.seed.has_value());
  // bf16 input: float32 files hold bf16 values exactly.
  const Loaded b = parse(npy(dict("<f4", "(1,)"), data({bits32(0x1.fep127f)}, 4)), formats::bf16);
  EXPECT_EQ(b.report.changed, 0u);
}

TEST(Npy, MalformedFilesSayWhatIsWrong) {
  const std::string good = npy(dict("<f4", "(2,)"), data({bits32(1.0f), bits32(2.0f)}, 4));
  ASSERT_EQ(npy_error(good), "(no error)");
  EXPECT_EQ(npy_error(""),
            "t.npy: not a .npy file (bad magic: the file must start with \\x93NUMPY)");
  EXPECT_EQ(npy_error("PK\x03\x04 zip file"),
            "t.npy: not a .npy file (bad magic: the file must start with \\x93NUMPY)");
  EXPECT_EQ(npy_error(good.substr(0, 7)),
            "t.npy: truncated: the file ends inside the format version");
  EXPECT_EQ(npy_error(good.substr(0, 9)),
            "t.npy: truncated: the file ends inside the header length");
  std::string v4 = good;
  v4[6] = 4;
  EXPECT_EQ(npy_error(v4), "t.npy: unsupported .npy format version 4.0 (supported: 1.0, 2.0, 3.0)");
  EXPECT_EQ(npy_error(good.substr(0, 40)),
            "t.npy: truncated: the header is 118 bytes but only 30 follow");
  EXPECT_EQ(npy_error(npy(dict("<i4", "(2,)"), data({1, 2}, 4))),
            "t.npy: unsupported dtype '<i4' (supported: '<f2', '<f4', '<f8' and big-endian '>f2', "
            "'>f4', '>f8'; bfloat16 is not a NumPy dtype: save bf16 data as float32, which holds "
            "every bf16 value exactly, and read it as bf16)");
  EXPECT_NE(npy_error(npy(dict("<V2", "(2,)"), data({1, 2}, 2))).find("bfloat16 is not a NumPy"),
            std::string::npos);
  EXPECT_NE(npy_error(npy(dict("|u1", "(2,)"), "ab")).find("unsupported dtype '|u1'"),
            std::string::npos);
  EXPECT_EQ(npy_error(npy(dict("<f4", "(2,)", true), data({1, 2}, 4))),
            "t.npy: fortran_order is True: only C-order (row-major) arrays are supported; save "
            "np.ascontiguousarray(a)");
  EXPECT_EQ(npy_error(npy(dict("<f4", "(3,)"), data({1, 2}, 4))),
            "t.npy: truncated data: shape [3] of '<f4' needs 3 elements of 4 bytes, but only 8 "
            "bytes follow the header");
  EXPECT_EQ(npy_error(npy(dict("<f4", "(1,)"), data({1, 2}, 4))),
            "t.npy: 4 unexpected bytes after the data (shape [1] of '<f4' needs 4 bytes)");
  EXPECT_EQ(npy_error(npy(dict("<f8", "(4294967296, 4294967296, 4294967296)"), "")),
            "t.npy: shape [4294967296, 4294967296, 4294967296] has too many elements");
  EXPECT_EQ(npy_error(npy(dict("<f8", "(99999999999999999999999,)"), "")),
            "t.npy: bad .npy header: a dimension in 'shape' is too large");
  EXPECT_EQ(npy_error(npy(dict("<f8", "(-1,)"), "")),
            "t.npy: bad .npy header: expected a non-negative integer in 'shape' at '-1,), }' "
            "(offset 51 of the header)");
  EXPECT_EQ(npy_error(npy(dict("<f8", "[2]"), "")),
            "t.npy: bad .npy header: expected '(' at '[2], }' (offset 50 of the header)");
  EXPECT_EQ(npy_error(npy("{'descr': '<f8', 'shape': (1,)}", "")),
            "t.npy: bad .npy header: missing key 'fortran_order'");
  EXPECT_EQ(npy_error(npy("{'descr': '<f8', 'fortran_order': False}", "")),
            "t.npy: bad .npy header: missing key 'shape'");
  EXPECT_EQ(npy_error(npy("{'fortran_order': False, 'shape': ()}", "")),
            "t.npy: bad .npy header: missing key 'descr'");
  EXPECT_EQ(npy_error(npy("{'descr': '<f8', 'descr': '<f8'}", "")),
            "t.npy: bad .npy header: key 'descr' appears twice");
  EXPECT_EQ(npy_error(npy("{'descr': '<f8', 'fortran_order': 0, 'shape': ()}", "")),
            "t.npy: bad .npy header: expected True or False for 'fortran_order' at '0, 'shape':' "
            "(offset 34 of the header)");
  EXPECT_EQ(npy_error(npy("{'descr': '<f8', 'order': 'C'}", "")),
            "t.npy: bad .npy header: unexpected key 'order' (expected 'descr', 'fortran_order', "
            "'shape')");
  EXPECT_EQ(npy_error(npy("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': ()}", "")),
            "t.npy: bad .npy header: structured dtypes (a list in 'descr') are not supported; only "
            "float16, float32 and float64 arrays are");
  EXPECT_EQ(npy_error(npy("{'descr': '<f8", "")), "t.npy: bad .npy header: unterminated string");
  EXPECT_EQ(npy_error(npy("not a dict", "")),
            "t.npy: bad .npy header: expected '{' at 'not a dict' (offset 0 of the header)");
  EXPECT_EQ(npy_error(npy("{'descr': '<f8', 'fortran_order': False, 'shape': ()} x", "")),
            "t.npy: bad .npy header: unexpected text after the dict at 'x' (offset 54 of "
            "the header)");
  EXPECT_EQ(npy_error(npy("{'descr': '<f8' 'shape': ()}", "")),
            "t.npy: bad .npy header: expected ',' or '}' at ''shape': ()}' (offset 16 of the "
            "header)");
}

// Every prefix of a valid file is an error, never a crash; so is every single-byte corruption
// (or the file still parses).
TEST(Npy, TruncationsAndCorruptionsNeverCrash) {
  const std::string good = npy(dict("<f2", "(3, 2)"), data({1, 2, 3, 4, 5, 6}, 2), 2);
  for (std::size_t n = 0; n < good.size(); ++n) {
    EXPECT_THROW(parse(good.substr(0, n)), io::InputError) << n;
  }
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (const int b : {0x00, 0x20, 0x27, 0x29, 0x2C, 0x31, 0x7F, 0x80, 0xFF}) {
      std::string bad = good;
      bad[i] = static_cast<char>(b);
      try {
        parse(bad, formats::fp16);
      } catch (const io::InputError&) {
      }
    }
  }
}

TEST(Npy, FilesOnDisk) {
  const auto path = temp_file("x.npy", npy(dict("<f8", "(2, 2)"), data(f64_bits({1, 2, 3, 4}), 8)));
  const Loaded l = read_npy(path, formats::fp32);
  EXPECT_EQ(l.tensor.data, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(read_tensor_file(path.string(), formats::fp32).tensor.data, l.tensor.data);
  const std::size_t shape[] = {2, 2};
  const Generated g = generate("file:" + path.string(), shape, formats::fp32, 0);
  EXPECT_EQ(g.tensor.data, l.tensor.data);
  EXPECT_EQ(g.tensor.source, "file:" + path.string());
  const std::size_t other[] = {4};
  try {
    generate("file:" + path.string(), other, formats::fp32, 0);
    ADD_FAILURE() << "no error";
  } catch (const io::InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              path.string() + ": shape [2, 2] does not match the expected [4]");
  }
  const std::string missing = (std::filesystem::path(testing::TempDir()) / "missing.npy").string();
  try {
    read_tensor_file(missing, formats::fp32);
    ADD_FAILURE() << "no error";
  } catch (const io::InputError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot open: No such file or directory");
  }
  try {
    read_npy(testing::TempDir(), formats::fp32);
    ADD_FAILURE() << "no error";
  } catch (const io::InputError& e) {
    EXPECT_EQ(std::string(e.what()), testing::TempDir() + ": is a directory");
  }
  try {
    read_tensor_file("x.txt", formats::fp32);
    ADD_FAILURE() << "no error";
  } catch (const io::InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "x.txt: unknown tensor file type (expected a name ending in .npy, .json or "
              ".json#member)");
  }
}

// ---- JSON -------------------------------------------------------------------------------------

std::string json_error(std::string_view text) {
  try {
    parse_json_tensor(text, formats::fp16, "x.json");
  } catch (const io::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string members_error(std::string_view text) {
  try {
    parse_json_tensors(text, formats::fp16, "x.json");
  } catch (const io::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Json, NestedListsAreRowMajorTensors) {
  const Loaded l = parse_json_tensor(R"([[1, 2, 3], [4, "0x1.8p-3", -6e0]])", formats::fp32, "x");
  EXPECT_EQ(l.tensor.shape, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(l.tensor.data, (std::vector<double>{1, 2, 3, 4, 0.1875, -6}));
  EXPECT_EQ(l.report.changed, 0u);
  const Loaded cube = parse_json_tensor("[[[1], [2]], [[3], [4]], [[5], [6]]]", formats::fp32, "x");
  EXPECT_EQ(cube.tensor.shape, (std::vector<std::size_t>{3, 2, 1}));
  EXPECT_EQ(cube.tensor.data, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  const Loaded scalar = parse_json_tensor("2.5", formats::fp32, "x");
  EXPECT_TRUE(scalar.tensor.shape.empty());
  EXPECT_EQ(scalar.tensor.data, std::vector<double>{2.5});
  EXPECT_EQ(parse_json_tensor("[]", formats::fp32, "x").tensor.shape, std::vector<std::size_t>{0});
  EXPECT_EQ(parse_json_tensor("[[], []]", formats::fp32, "x").tensor.shape,
            (std::vector<std::size_t>{2, 0}));
}

TEST(Json, TextsAreRoundedFromTheirExactValueAndCounted) {
  // 1 + 2^-11 + 2^-60 lies above the fp16 midpoint its binary64 would land on.
  const Loaded l = parse_json_tensor(
      R"([1.00048828125000000000000001, "0x1.002000000000001p0", 70000, 1e-10, "nan", "-inf", 0.1])",
      formats::fp16, "x");
  EXPECT_EQ(l.tensor.data[0], 0x1.004p0);
  EXPECT_EQ(l.tensor.data[1], 0x1.004p0);
  EXPECT_EQ(l.tensor.data[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ(l.tensor.data[3], 0.0);
  EXPECT_TRUE(std::isnan(l.tensor.data[4]));
  EXPECT_EQ(l.tensor.data[5], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(l.report.changed, 5u);  // all but the NaN and -inf
  EXPECT_EQ(l.report.overflowed, 1u);
  EXPECT_EQ(l.report.flushed, 1u);
}

TEST(Json, RaggedAndMalformedListsNameThePlace) {
  EXPECT_EQ(json_error("[[1,2,3,4,5],[1,2,3,4,5],[1,2,3,4,5],[1,2,3,4],[1]]"),
            "x.json: $[3]: expected 5 elements, got 4");
  EXPECT_EQ(json_error("[[1,2],[3,4,5]]"), "x.json: $[1]: expected 2 elements, got 3");
  EXPECT_EQ(json_error("[[[1,2],[3,4]],[[1,2],[3]]]"),
            "x.json: $[1][1]: expected 2 elements, got 1");
  EXPECT_EQ(json_error("[[[1,2],[3,4]],[[1,2]]]"), "x.json: $[1]: expected 2 elements, got 1");
  EXPECT_EQ(json_error("[[1,2],3]"), "x.json: $[1]: expected a list, got a number");
  EXPECT_EQ(json_error("[1,[2]]"), "x.json: $[1]: expected a number, got a list");
  EXPECT_EQ(json_error("[[], 1]"), "x.json: $[1]: expected a list, got a number");
  EXPECT_EQ(json_error("[[], [1]]"), "x.json: $[1]: expected 0 elements, got 1");
  EXPECT_EQ(json_error("[[1, null]]"),
            "x.json: $[0][1]: expected a number or a number string, got null");
  EXPECT_EQ(json_error("[[1, true]]"),
            "x.json: $[0][1]: expected a number or a number string, got a boolean");
  EXPECT_EQ(json_error("[1, {}]"),
            "x.json: $[1]: expected a number or a number string, got an object");
  EXPECT_EQ(json_error(R"([1, "one"])"), "x.json: $[1]: 'one' is not a number");
  EXPECT_EQ(json_error(R"({"a": [1]})"), "x.json: $: expected a list or a number, got an object");
  EXPECT_EQ(json_error("[1, 2"),
            "x.json: line 1, column 6: syntax error while parsing array - unexpected end of input; "
            "expected ']'");
  EXPECT_EQ(json_error(""),
            "x.json: line 1, column 1: syntax error while parsing value - unexpected end of input; "
            "expected '[', '{', or a literal");
  EXPECT_EQ(json_error("[1] [2]"),
            "x.json: line 1, column 5: syntax error while parsing value - unexpected '['; expected "
            "end of input");
  // A number beyond binary64 (which the JSON library cannot hold) and a long bad token: said
  // briefly, with how to write the number so that it is read.
  EXPECT_EQ(json_error("[1,\n 1e400]"),
            "x.json: line 2, column 2: the number 1e400 is beyond the range of a binary64 (about "
            "1.8e308); as a string, \"1e400\", it is rounded from its exact value");
  EXPECT_LT(json_error("[" + std::string(1000, '9') + "]").size(), 300u);
  EXPECT_EQ(json_error("[\"" + std::string(1 << 20, 'z') + "\"]"),
            "x.json: $[0]: '" + std::string(60, 'z') + "…' is not a number");
}

// Every proper prefix of a valid text is an error; single-byte corruptions are errors or parse.
TEST(Json, TruncationsAndCorruptionsNeverCrash) {
  const std::string good = R"({"a": [[1, "0x1p-3"], [3e0, -4]], "b": [[[5]]]})";
  ASSERT_EQ(parse_json_tensors(good, formats::fp16, "x").size(), 2u);
  for (std::size_t n = 0; n < good.size(); ++n) {
    EXPECT_THROW(parse_json_tensors(good.substr(0, n), formats::fp16, "x"), io::InputError) << n;
  }
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (const char c : std::string_view("[]{},:\"0e-x \\")) {
      std::string bad = good;
      bad[i] = c;
      for (const bool members : {true, false}) {
        try {
          if (members) {
            parse_json_tensors(bad, formats::fp16, "x");
          } else {
            parse_json_tensor(bad, formats::fp16, "x");
          }
        } catch (const io::InputError&) {
        }
      }
    }
  }
}

TEST(Json, ObjectsOfNamedTensors) {
  const auto t = parse_json_tensors(R"({"a": [[1, 2], [3, 4]], "b": [5, 6, 7], "c": 8})",
                                    formats::fp32, "x.json");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.at("a").tensor.shape, (std::vector<std::size_t>{2, 2}));
  EXPECT_EQ(t.at("b").tensor.data, (std::vector<double>{5, 6, 7}));
  EXPECT_TRUE(t.at("c").tensor.shape.empty());
  EXPECT_EQ(t.at("a").tensor.source, "file:x.json#a");
  EXPECT_EQ(members_error(R"({"a": [[1, 2, 3, 4, 5], [1], [1], [1, 2, 3, 4]]})"),
            "x.json: a[1]: expected 5 elements, got 1");
  EXPECT_EQ(members_error(R"({"a": [1], "a": [2]})"), "x.json: member 'a' appears twice");
  EXPECT_EQ(members_error(R"({"a": {"b": 1}})"),
            "x.json: a: expected a list or a number, got an object");
  EXPECT_EQ(members_error("[1]"),
            "x.json: expected an object of tensors {\"name\": [...], ...}, got a list");

  const auto path = temp_file("ops.json", R"({"a": [[1, 2], [3, 4]], "b": [5, 6, 7]})");
  EXPECT_EQ(read_tensor_file(path.string() + "#b", formats::fp32).tensor.data,
            (std::vector<double>{5, 6, 7}));
  try {
    read_tensor_file(path.string() + "#c", formats::fp32);
    ADD_FAILURE() << "no error";
  } catch (const io::InputError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ": no member 'c' (members: 'a', 'b')");
  }
  const auto single = temp_file("t.json", "[[1, 2, 3], [4, 5, 6]]");
  const std::size_t shape[] = {2, 3};
  EXPECT_EQ(generate("file:" + single.string(), shape, formats::bf16, 0).tensor.data,
            (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace ampbench::inputs
