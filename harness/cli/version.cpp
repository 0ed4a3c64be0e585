#include "harness/cli/version.hpp"

#include <fmt/format.h>

#include "harness/cli/build_info.hpp"
#if AMPBENCH_HAVE_CUDA
#include "kernels/device.hpp"
#endif

namespace ampbench::cli {

std::string version_text() {
  std::string text =
      fmt::format("ampbench {} (git {}, {} {}, {}, CUDA backend: {})", build_info::kVersion,
                  build_info::kGitRevision, build_info::kCompiler, build_info::kCompilerVersion,
                  build_info::kBuildType, build_info::kCuda);
#if AMPBENCH_HAVE_CUDA
  // The libraries this process loaded, which can differ from the headers it was built with.
  text += '\n';
  text += kernels::describe(kernels::library_versions());
#endif
  return text;
}

}  // namespace ampbench::cli
