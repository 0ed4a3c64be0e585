// Fuzz target: suites in TOML (results::parse_suite, harness/results/suite.hpp), with the policy
// files, budgets files, op shapes, distributions and MMA models they name. Relative files are found
// in a temporary directory of the process holding a user policy (policy.toml) and a budgets file
// (budgets-small.toml). Bad input is a results::SuiteError whose message starts with the source's
// name. Inputs that could name a file under /dev, /proc or /sys are skipped (and with them any
// TOML Unicode escape, which could spell one): reading /dev/zero as a policy would never end, and
// that is no parser's fault.
//
// Invariants of an accepted suite: at least one case; keys unique and starting with the case's
// kind; the shards 0/2 and 1/2 together hold every case once.
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <string_view>

#include "harness/fuzz/fuzz.hpp"
#include "harness/results/suite.hpp"

namespace {

using namespace ampbench;

constexpr std::string_view kPolicy = R"(name = "fuzz-policy"
base = "amp-bf16"
[matmul]
accumulate = "fp32"
[ops.dot]
input = "user:p=8,emin=-14,emax=15"
)";

constexpr std::string_view kBudgets = R"([[budget]]
op = "*"
policy = "*"
metric = "max_ulp"
limit = 1e6
source = "fuzz"
)";

void write(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) fuzz::finding("cannot write " + path.string());
}

// The temporary directory, with the files a suite may name.
const std::filesystem::path& directory() {
  [[maybe_unused]] static const bool written = [] {
    write(fuzz::temporary_directory() / "policy.toml", kPolicy);
    write(fuzz::temporary_directory() / "budgets-small.toml", kBudgets);
    return true;
  }();
  return fuzz::temporary_directory();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::text(data, size);
  for (const std::string_view special : {"/dev", "/proc", "/sys", "\\u", "\\U"}) {
    if (text.find(special) != std::string_view::npos) return 0;
  }
  constexpr std::string_view kName = "s.toml";
  results::Suite suite;
  if (!fuzz::accepts<results::SuiteError>(
          kName, [&] { suite = results::parse_suite(text, kName, directory()); })) {
    return 0;
  }
  fuzz::check(!suite.cases.empty(), "a suite without cases");
  std::set<std::string> keys;
  for (const auto& c : suite.cases) {
    fuzz::check(keys.insert(c.key).second, "a key twice: " + c.key);
    fuzz::check(c.key.starts_with(std::string(c.kind()) + "/"),
                "a key that does not start with its kind: " + c.key);
  }
  const auto even = results::select_shard(suite.cases, results::parse_shard("0/2"));
  const auto odd = results::select_shard(suite.cases, results::parse_shard("1/2"));
  fuzz::check(even.size() + odd.size() == suite.cases.size(), "shards 0/2 and 1/2 lose cases");
  return 0;
}
