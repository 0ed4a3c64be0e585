// Fuzz target: training data files (harness/train/data.hpp), which are read from paths only; the
// bytes are written to files in a temporary directory of the process first. Bytes that start with
// the .npy magic are a pair for train::load_dataset_npy: the inputs up to the next magic, the
// targets from it (without a second magic, the same bytes are both: float labels); anything else
// is a CSV file for train::load_dataset_csv. Bad data is a train::DataError naming the file.
//
// Invariants of an accepted data set: at least one sample; inputs and targets hold samples times
// the sample size and samples times the targets per sample; every input is a finite fp32 value;
// every target is in [0, classes).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "harness/fuzz/fuzz.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/train/data.hpp"

namespace {

using namespace ampbench;

std::filesystem::path write(std::string_view name, std::string_view bytes) {
  const std::filesystem::path path = fuzz::temporary_directory() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) fuzz::finding("cannot write " + path.string());
  return path;
}

void check_dataset(const train::Dataset& d) {
  const std::size_t samples = d.samples();
  fuzz::check(samples > 0, "a data set without samples");
  fuzz::check(d.inputs.size() == samples * d.sample_size(), "inputs: not samples x sample size");
  fuzz::check(d.targets.size() == samples * d.targets_per_sample,
              "targets: not samples x targets per sample");
  for (const double x : d.inputs) {
    fuzz::check(std::isfinite(x), "an input that is not finite");
    const auto again =
        numeric::round_to(numeric::formats::fp32, numeric::Rounding::nearest_even, x);
    fuzz::check(again.event == numeric::RoundingEvent::exact, "an input that is not an fp32 value");
  }
  for (const std::int64_t t : d.targets) {
    fuzz::check(t >= 0 && static_cast<std::uint64_t>(t) < d.classes,
                "a target outside [0, classes)");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = fuzz::text(data, size);
  const std::string name = fuzz::temporary_directory().string();
  constexpr std::string_view kMagic = "\x93NUMPY";
  train::Dataset d;
  bool ok = false;
  if (bytes.starts_with(kMagic)) {
    const std::size_t second = bytes.find(kMagic, kMagic.size());
    const std::string_view inputs = bytes.substr(0, second);
    const std::string_view targets =
        second == std::string_view::npos ? bytes : bytes.substr(second);
    const auto inputs_path = write("inputs.npy", inputs);
    const auto targets_path = write("targets.npy", targets);
    ok = fuzz::accepts<train::DataError>(
        name, [&] { d = train::load_dataset_npy(inputs_path, targets_path); });
  } else {
    const auto path = write("data.csv", bytes);
    ok = fuzz::accepts<train::DataError>(name, [&] { d = train::load_dataset_csv(path); });
  }
  if (ok) check_dataset(d);
  return 0;
}
