// What the fuzz targets share (docs/fuzzing.md). A target feeds its bytes to a real parser: the
// parser's documented error for bad input is the expected outcome of most inputs, and a finding
// is everything else: a crash or a sanitizer report, an exception of another type escaping the
// parser (std::length_error, std::out_of_range, a JSON library's type_error...), an error with an
// empty message or one that does not name the input, or a broken invariant of what the parser
// accepted. A finding prints what happened and aborts, which libFuzzer and the replay programs
// report as a crash.
#pragma once

#include <cxxabi.h>
#include <stdlib.h>  // mkdtemp

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace ampbench::fuzz {

[[noreturn]] inline void finding(std::string_view what) {
  std::fputs("fuzz finding: ", stderr);
  std::fwrite(what.data(), 1, what.size(), stderr);  // all of it: inputs may hold NUL bytes
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::abort();
}

inline void check(bool ok, std::string_view what) {
  if (!ok) finding(what);
}

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A directory of this process's own under $TMPDIR (or /tmp), for the targets of parsers that read
// files only; removed at exit. The path is never destroyed: the exit handler runs after the
// destructors of statics made later.
inline const std::filesystem::path& temporary_directory() {
  static const std::filesystem::path* const dir = [] {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "ampbench-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) finding("cannot create a temporary directory");
    const auto* path = new std::filesystem::path(pattern);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(temporary_directory(), ec);
    });
    return path;
  }();
  return *dir;
}

namespace detail {

// The demangled type of the exception being handled.
inline std::string current_type() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) return "unknown";
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> name(
      abi::__cxa_demangle(type->name(), nullptr, nullptr, &status), &std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(type->name());
}

template <class First, class... Rest>
bool is_one_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const First&) {
    return true;
  } catch (...) {
  }
  if constexpr (sizeof...(Rest) > 0) {
    return is_one_of<Rest...>(e);
  } else {
    return false;
  }
}

}  // namespace detail

// Runs `parse`: true when it returns, false when it throws one of `Documented` with a message
// that contains `name` (the input's name as the target gave it to the parser, up to a NUL byte;
// empty: any non-empty message). Any other exception is a finding (with no `Documented`, any
// exception).
template <class... Documented, class F>
bool accepts(std::string_view name, F&& parse) {
  try {
    parse();
    return true;
  } catch (const std::exception& e) {
    const std::string type = detail::current_type();
    const std::string_view message = e.what();
    if constexpr (sizeof...(Documented) == 0) {
      finding("undocumented exception " + type + ": " + std::string(message));
    } else if (!detail::is_one_of<Documented...>(std::current_exception())) {
      finding("undocumented exception " + type + ": " + std::string(message));
    }
    if (message.empty()) finding(type + " with an empty message");
    // what() is a C string: a message quoting a NUL byte of the input ends there.
    if (message.find(name.substr(0, name.find('\0'))) == std::string_view::npos) {
      finding(type + " does not name the input '" + std::string(name) +
              "': " + std::string(message));
    }
    return false;
  } catch (...) {
    finding("an exception that is not a std::exception: " + detail::current_type());
  }
}

}  // namespace ampbench::fuzz
