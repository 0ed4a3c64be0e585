// Function multiversioning for the vectorised host loops: target_clones compiles a function for
// several x86-64 levels and picks one at load time; flatten inlines its callees (lambdas included),
// without which nothing vectorises. clang 14 cannot combine the two attributes, so there the clones
// are kept without flatten (slower, the same results: the loops compute the same IEEE operations).
#pragma once

#if defined(__clang__)
#define AMPBENCH_CLONES_FLATTENED(...) [[gnu::target_clones(__VA_ARGS__)]]
#else
#define AMPBENCH_CLONES_FLATTENED(...) [[gnu::target_clones(__VA_ARGS__), gnu::flatten]]
#endif

namespace ampbench::numeric {

// Whether this CPU runs x86-64-v3 code (AVX2 and FMA among its features). GCC knows the level by
// name; clang 14 does not, so there its two features that the clones rely on are asked for.
inline bool cpu_has_x86_64_v3() {
#if defined(__clang__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return __builtin_cpu_supports("x86-64-v3");
#endif
}

}  // namespace ampbench::numeric
