// The files ampbench reads and writes, all through these few functions (docs/results.md, "Files"):
// an input is read whole or refused with the reason (a directory, a device, a read error with the
// system's message), never read as empty or forever; an output is written whole or not at all
// (a temporary file, flushed, renamed over the old one); a JSON document that is not valid is
// reported at its line and column with a short excerpt of the offending text.
#pragma once

#include <cstddef>
#include <filesystem>
#include <istream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ampbench::io {

// A file that cannot be read, or a document in it that cannot be parsed: what() is "FILE: REASON".
class FileError : public std::runtime_error {
 public:
  FileError(const std::string& file, std::string reason);
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// The whole content of the file at `path`. A regular file or a pipe (a shell's <(...)) is read to
// its end; a directory ("PATH: is a directory"), a device or a socket ("PATH: is not a regular
// file (a character device)") is refused before anything is read; a failed open or read names the
// system's reason ("PATH: cannot open: No such file or directory", "PATH: cannot read:
// Input/output error"). Throws FileError.
std::string read_file(const std::filesystem::path& path);

// The rest of a stream (standard input), whole; a read error (a directory on standard input)
// throws FileError "NAME: cannot read: REASON" instead of reading as the end.
std::string read_stream(std::istream& in, std::string_view name);

// Why `path` cannot take an output, or nothing: it is a directory, or something other than a
// regular file (a device, which the rename would replace), or its directory does not exist or
// cannot be written. What the commands check before any work starts.
std::optional<std::string> output_path_problem(const std::filesystem::path& path);

// Writes `text` to `path` through a temporary file beside it (PATH.tmp.PID, the same file system),
// flushed to the disk and renamed over `path`, so that `path` is always the old file or the whole
// new one; the temporary is removed when anything fails. The problem, or nothing.
std::optional<std::string> write_file(const std::filesystem::path& path, std::string_view text);

// Whether two paths name one file: the same device and inode when both exist, otherwise the same
// path once made absolute and resolved through the links that exist.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

// `text` as a message quotes it: whole when it has at most `limit` characters, otherwise its
// first `limit` (never cutting a UTF-8 character) and an ellipsis, "1111111111…".
std::string excerpt(std::string_view text, std::size_t limit = 60);

// A JSON document. Invalid JSON throws FileError "SOURCE: line L, column C: what is wrong", the
// text it stopped at quoted as an excerpt; a number beyond binary64's range ("1e400", an integer
// of 400 digits) is named as such.
nlohmann::json parse_json(std::string_view text, std::string_view source);

// The same message for a SAX reader's parse_error (its arguments, and the text parsed): "line L,
// column C: what is wrong", without nlohmann's prefix, its token cut to an excerpt.
std::string json_error(std::string_view text, std::size_t position, const std::string& last_token,
                       const nlohmann::detail::exception& e);
// Whether `e` is nlohmann's error for a number beyond binary64 (out_of_range.406).
bool is_number_overflow(const nlohmann::detail::exception& e);

}  // namespace ampbench::io
