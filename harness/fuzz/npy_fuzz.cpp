// Fuzz target: NumPy .npy files (inputs::parse_npy, harness/inputs/tensor_file.hpp), read into
// bf16 so that every value is rounded. Bad input is an io::InputError whose message starts with
// the file's name. (The training data's label reader, which reads integer .npy files too, is the
// target `dataset`.)
//
// Invariants of an accepted file: as many values as the shape has elements, each a value of the
// format and counted once in the rounding report; the source names the file.
#include <cmath>
#include <span>
#include <string>
#include <string_view>

#include "harness/fuzz/fuzz.hpp"
#include "harness/inputs/tensor_file.hpp"
#include "harness/numeric/rounding.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ampbench;
  constexpr std::string_view kName = "t.npy";
  const numeric::Format& f = numeric::formats::bf16;
  inputs::Loaded loaded;
  const auto bytes = std::as_bytes(std::span(data, size));
  if (!fuzz::accepts<io::InputError>(kName, [&] { loaded = inputs::parse_npy(bytes, f, kName); })) {
    return 0;
  }
  const inputs::Tensor& t = loaded.tensor;
  fuzz::check(t.data.size() == inputs::element_count(t.shape),
              "the number of values is not the shape's element count");
  fuzz::check(loaded.report.total() == t.data.size(),
              "the rounding report does not count every value");
  fuzz::check(t.source == "file:" + std::string(kName), "the source is not the file");
  for (const double v : t.data) {
    if (std::isnan(v)) continue;
    const numeric::Rounded again = numeric::round_to(f, numeric::Rounding::nearest_even, v);
    fuzz::check(again.event == numeric::RoundingEvent::exact, "a value is not a bf16 value");
  }
  return 0;
}
