// Fuzz target: tensors in JSON. The same text goes to the three JSON readers of numbers: the named
// arrays of io::read_number_arrays (harness/io/json_arrays.hpp), one tensor
// (inputs::parse_json_tensor) and an object of tensors (inputs::parse_json_tensors,
// harness/inputs/tensor_file.hpp). Bad input is an io::InputError; the tensor readers' messages
// start with the file's name.
//
// Invariants of an accepted text: the named arrays are exactly the names asked for; a tensor has
// as many values as its shape has elements, each a value of the format, each counted once in its
// rounding report.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "harness/fuzz/fuzz.hpp"
#include "harness/inputs/tensor_file.hpp"
#include "harness/io/json_arrays.hpp"
#include "harness/numeric/rounding.hpp"

namespace {

using namespace ampbench;

constexpr std::string_view kName = "t.json";

void check_tensor(const inputs::Loaded& loaded, const numeric::Format& f, const std::string& what) {
  const inputs::Tensor& t = loaded.tensor;
  fuzz::check(t.data.size() == inputs::element_count(t.shape),
              what + ": the number of values is not the shape's element count");
  fuzz::check(loaded.report.total() == t.data.size(),
              what + ": the rounding report does not count every value");
  fuzz::check(numeric::same_format(t.format, f), what + ": not in the format asked for");
  for (const double v : t.data) {
    if (v != v) continue;  // NaN
    const numeric::Rounded again = numeric::round_to(f, numeric::Rounding::nearest_even, v);
    fuzz::check(again.event == numeric::RoundingEvent::exact,
                what + ": a value is not a value of the format");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::text(data, size);

  constexpr std::string_view kNames[] = {"a", "b"};
  std::map<std::string, std::vector<std::string>> arrays;
  if (fuzz::accepts<io::InputError>("", [&] { arrays = io::read_number_arrays(text, kNames); })) {
    fuzz::check(arrays.size() == 2 && arrays.contains("a") && arrays.contains("b"),
                "read_number_arrays: the members are not exactly a and b");
  }

  inputs::Loaded one;
  if (fuzz::accepts<io::InputError>(
          kName, [&] { one = inputs::parse_json_tensor(text, numeric::formats::fp16, kName); })) {
    check_tensor(one, numeric::formats::fp16, "parse_json_tensor");
  }

  std::map<std::string, inputs::Loaded> many;
  if (fuzz::accepts<io::InputError>(
          kName, [&] { many = inputs::parse_json_tensors(text, numeric::formats::bf16, kName); })) {
    for (const auto& [member, loaded] : many) {
      check_tensor(loaded, numeric::formats::bf16, "parse_json_tensors member " + member);
    }
  }
  return 0;
}
