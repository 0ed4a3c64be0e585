// The replay program of a fuzz target (docs/fuzzing.md): runs LLVMFuzzerTestOneInput on every file
// of the directories (or the files) given, in name order, so that every build (GCC's included,
// without libFuzzer) checks the seed corpus and every past finding. A finding aborts, naming the
// input first. Usage: fuzz_TARGET_replay PATH... [--optional PATH...]; a path after --optional
// may be missing (a target with no regressions yet).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "harness/fuzz/fuzz.hpp"

namespace {

std::vector<std::filesystem::path> inputs_of(const std::filesystem::path& path) {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(path)) {
    files.push_back(path);
    return files;
  }
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && !name.starts_with('.')) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  bool optional = false;
  std::size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--optional") {
      optional = true;
      continue;
    }
    const std::filesystem::path path(arg);
    if (!std::filesystem::exists(path)) {
      if (optional) continue;
      std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      return 2;
    }
    for (const auto& file : inputs_of(path)) {
      std::ifstream in(file, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "%s: cannot open\n", file.c_str());
        return 2;
      }
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      std::fprintf(stderr, "%s\n", file.c_str());
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++count;
    }
  }
  if (count == 0) {
    std::fprintf(stderr, "no inputs replayed\n");
    return 2;
  }
  std::printf("replayed %zu inputs without a finding\n", count);
  return 0;
}
