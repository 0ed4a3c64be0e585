// Fuzz target: the short texts users write on the command line and in suites. The first byte
// chooses the parser, the rest is the text:
//   0  a distribution spec (inputs::parse_spec): bad text is an inputs::SpecError quoting it;
//      parse_spec(to_string(s)) == s, as distributions.hpp promises
//   1  a format name or user format (numeric::parse_format, then numeric::validate): an error
//      or a format
//   2  an op's shape (ops::parse_shape; the second byte chooses the op): bad text is an
//      ops::OpError quoting it; to_string of a shape reads back as the same shape
//   3  a shard I/N (results::parse_shard): bad text is a std::invalid_argument quoting it; I < N
//      and to_string reads back as the same shard
//   4  a case key (results::parse_case_key), which the history reads from any record: no error
//   5  a rounding mode name (numeric::rounding_from_name): its name reads back as the same mode
#include <string>
#include <string_view>

#include "harness/fuzz/fuzz.hpp"
#include "harness/inputs/distributions.hpp"
#include "harness/numeric/options.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/results/history.hpp"
#include "harness/results/suite.hpp"

namespace {

using namespace ampbench;

void spec(std::string_view text) {
  inputs::Spec s;
  if (!fuzz::accepts<inputs::SpecError>(text, [&] { s = inputs::parse_spec(text); })) return;
  const std::string canonical = inputs::to_string(s);
  inputs::Spec again;
  fuzz::check(
      fuzz::accepts<inputs::SpecError>(canonical, [&] { again = inputs::parse_spec(canonical); }),
      "the canonical text " + canonical + " is refused");
  fuzz::check(again == s, "the canonical text " + canonical + " reads as another spec");
}

void format(std::string_view text) {
  const numeric::FormatSpec spec = numeric::parse_format(text);
  if (!spec.format) {
    fuzz::check(!spec.error.empty(), "no format and no error");
    return;
  }
  // parse_format reads the syntax; whether the format is usable is validate's to say, with reasons.
  numeric::RoundingOptions options;
  options.format = *spec.format;
  const numeric::Validation v = numeric::validate(options);
  for (const auto& error : v.errors) fuzz::check(!error.empty(), "validate: an empty error");
}

void shape(std::uint8_t op_byte, std::string_view text) {
  const auto ops = ops::catalog();
  const ops::OpInfo& op = ops[op_byte % ops.size()];
  ops::Shape s;
  if (!fuzz::accepts<ops::OpError>(text, [&] { s = ops::parse_shape(op, text); })) return;
  const std::string canonical = ops::to_string(s);
  ops::Shape again;
  fuzz::check(
      fuzz::accepts<ops::OpError>(canonical, [&] { again = ops::parse_shape(op, canonical); }),
      std::string(op.name) + " shape " + canonical + " is refused");
  fuzz::check(again.sizes == s.sizes,
              std::string(op.name) + " shape " + canonical + " reads as another shape");
}

void shard(std::string_view text) {
  results::Shard s;
  if (!fuzz::accepts<std::invalid_argument>(text, [&] { s = results::parse_shard(text); })) return;
  fuzz::check(s.index < s.count, "a shard index not below the count");
  const results::Shard again = results::parse_shard(results::to_string(s));
  fuzz::check(again.index == s.index && again.count == s.count, "a shard that does not read back");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::string_view text = fuzz::text(data + 2, size - 2);
  switch (data[0] % 6) {
    case 0: spec(text); break;
    case 1: format(text); break;
    case 2: shape(data[1], text); break;
    case 3: shard(text); break;
    case 4: fuzz::accepts<>("", [&] { results::parse_case_key(text); }); break;
    case 5:
      if (const auto mode = numeric::rounding_from_name(text)) {
        fuzz::check(numeric::rounding_from_name(numeric::rounding_name(*mode)) == mode,
                    "a rounding mode whose name does not read back");
      }
      break;
  }
  return 0;
}
