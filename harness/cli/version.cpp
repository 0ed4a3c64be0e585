#include "harness/cli/version.hpp"

#include <fmt/format.h>

#include "harness/cli/build_info.hpp"
#include "harness/runtime/cuda.hpp"

namespace ampbench::cli {

std::string version_text() {
  std::string text =
      fmt::format("ampbench {} (git {}, {} {}, {}, CUDA backend: {})", build_info::kVersion,
                  build_info::kGitRevision, build_info::kCompiler, build_info::kCompilerVersion,
                  build_info::kBuildType, build_info::kCuda);
  // The libraries this process loaded, which can differ from the headers it was built with.
  if (runtime::built_with_cuda()) {
    text += '\n';
    text += runtime::cuda_library_versions();
  }
  return text;
}

}  // namespace ampbench::cli
