// What `ampbench --version` prints: version, git revision, compiler and, when built with CUDA,
// the CUDA library versions.
#pragma once

#include <string>

namespace ampbench::cli {
std::string version_text();
}
