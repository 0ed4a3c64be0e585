#include "harness/cli/version.hpp"

#include <fmt/format.h>

#include "harness/cli/build_info.hpp"

namespace ampbench::cli {

std::string version_text() {
  return fmt::format("ampbench {} (git {}, {} {}, {}, CUDA backend: {})", build_info::kVersion,
                     build_info::kGitRevision, build_info::kCompiler, build_info::kCompilerVersion,
                     build_info::kBuildType, build_info::kCuda);
}

}  // namespace ampbench::cli
