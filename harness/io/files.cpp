#include "harness/io/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <system_error>
#include <utility>

namespace ampbench::io {
namespace {

// What a file that is neither a regular file, a pipe nor a directory is, for messages.
std::string_view kind_of(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a file";
}

// A file descriptor closed when it goes out of scope.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }
  // Closes it now; false (with errno) when the close fails, as a delayed write error may.
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

[[noreturn]] void fail(const std::filesystem::path& path, std::string what) {
  throw FileError(path.string(), std::move(what));
}

}  // namespace

FileError::FileError(const std::string& file, std::string reason)
    : std::runtime_error(fmt::format("{}: {}", file, reason)), reason_(std::move(reason)) {}

std::string read_file(const std::filesystem::path& path) {
  // Looked at before it is opened: opening a device may do something (a tape rewinds).
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    fail(path, fmt::format("cannot open: {}", std::strerror(errno)));
  }
  if (S_ISDIR(info.st_mode)) fail(path, "is a directory");
  if (!S_ISREG(info.st_mode) && !S_ISFIFO(info.st_mode)) {
    fail(path, fmt::format("is not a regular file ({})", kind_of(info.st_mode)));
  }
  Descriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) fail(path, fmt::format("cannot open: {}", std::strerror(errno)));
  // Again on what was opened, in case the path changed in between.
  if (::fstat(file.get(), &info) != 0 || (!S_ISREG(info.st_mode) && !S_ISFIFO(info.st_mode))) {
    fail(path, "is not a regular file (it changed while it was opened)");
  }
  std::string text;
  if (S_ISREG(info.st_mode) && info.st_size > 0) {
    text.reserve(static_cast<std::size_t>(info.st_size));
  }
  std::array<char, 1 << 16> chunk{};
  for (;;) {
    const ssize_t n = ::read(file.get(), chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, fmt::format("cannot read: {}", std::strerror(errno)));
    if (n == 0) break;
    text.append(chunk.data(), static_cast<std::size_t>(n));
  }
  return text;
}

std::string read_stream(std::istream& in, std::string_view name) {
  std::string text;
  try {
    errno = 0;
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure&) {  // the file buffer's failed read
    throw FileError(std::string(name), fmt::format("cannot read: {}", std::strerror(errno)));
  }
  if (in.bad()) throw FileError(std::string(name), "cannot read it");
  return text;
}

std::optional<std::string> output_path_problem(const std::filesystem::path& path) {
  if (path.empty()) return "no file name";
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) return "is a directory";
    if (!S_ISREG(info.st_mode)) {
      return fmt::format("is not a regular file ({}; an output is written as a new file)",
                         S_ISFIFO(info.st_mode) ? "a pipe" : kind_of(info.st_mode));
    }
  }
  const auto parent = path.parent_path();
  const std::filesystem::path directory = parent.empty() ? "." : parent;
  std::error_code ec;
  if (!std::filesystem::is_directory(directory, ec)) {
    return fmt::format("directory {} does not exist", directory.string());
  }
  if (::access(directory.c_str(), W_OK) != 0) {
    return fmt::format("cannot write in directory {} ({})", directory.string(),
                       std::strerror(errno));
  }
  return std::nullopt;
}

std::optional<std::string> write_file(const std::filesystem::path& path, std::string_view text) {
  // Next to the file (the same file system, so that the rename is atomic) and unique to this
  // process, so that two writers never write into each other's temporary.
  const std::string temporary = fmt::format("{}.tmp.{}", path.string(), ::getpid());
  const auto fail_with = [&](const char* what) {
    const std::string message =
        fmt::format("cannot {} {} ({})", what, temporary, std::strerror(errno));
    ::unlink(temporary.c_str());
    return message;
  };
  // A new file: never through a link someone left at the temporary's name. One left by an earlier
  // process of the same id that was killed is stale: removed, and the open tried once more.
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
  int fd = ::open(temporary.c_str(), flags, 0644);
  if (fd < 0 && errno == EEXIST && ::unlink(temporary.c_str()) == 0) {
    fd = ::open(temporary.c_str(), flags, 0644);
  }
  if (fd < 0) return fmt::format("cannot write {} ({})", temporary, std::strerror(errno));
  Descriptor file(fd);
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(file.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail_with("write");
    done += static_cast<std::size_t>(n);
  }
  // On the disk before the rename: a machine that crashes after it finds the new file whole.
  if (::fsync(file.get()) != 0) return fail_with("flush");
  if (!file.close()) return fail_with("close");
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string message =
        fmt::format("cannot rename {} to it ({})", temporary, std::strerror(errno));
    ::unlink(temporary.c_str());
    return message;
  }
  // The directory entry too, so that the rename itself survives a crash.
  const auto parent = path.parent_path();
  const Descriptor directory(
      ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (directory.get() >= 0) ::fsync(directory.get());
  return std::nullopt;
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  if (std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec)) {
    const bool same = std::filesystem::equivalent(a, b, ec);
    if (!ec) return same;
  }
  const auto resolved = [](const std::filesystem::path& p) {
    std::error_code error;
    const auto absolute = std::filesystem::absolute(p, error);
    if (error) return p.lexically_normal();
    const auto canonical = std::filesystem::weakly_canonical(absolute, error);
    return error ? absolute.lexically_normal() : canonical;
  };
  return resolved(a) == resolved(b);
}

std::string excerpt(std::string_view text, std::size_t limit) {
  if (text.size() <= limit) return std::string(text);
  std::size_t cut = limit;
  // Back to the start of a UTF-8 character: continuation bytes are 10xxxxxx.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "…";
}

namespace {

// Accepts every event and keeps the first error: where json::parse failed.
class ErrorLocator : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit ErrorLocator(std::string_view text) : text_(text) {}
  std::string error;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& e) override {
    error = json_error(text_, position, last_token, e);
    return false;
  }

 private:
  std::string_view text_;
};

}  // namespace

bool is_number_overflow(const nlohmann::detail::exception& e) {
  return dynamic_cast<const nlohmann::detail::out_of_range*>(&e) != nullptr && e.id == 406;
}

std::string json_error(std::string_view text, std::size_t position, const std::string& last_token,
                       const nlohmann::detail::exception& e) {
  // The position counts the characters read. A number beyond binary64 was read whole: the place
  // is where it starts. A syntax error is the last character read (one past the end of the text
  // when the text ended too soon).
  const bool overflow = is_number_overflow(e);
  const std::size_t end = std::min(position, text.size() + 1);
  const std::size_t place =
      overflow ? (end >= last_token.size() ? end - last_token.size() : 0) : (end > 0 ? end - 1 : 0);
  const std::string_view before = text.substr(0, std::min(place, text.size()));
  const auto lines = std::count(before.begin(), before.end(), '\n');
  const auto newline = before.rfind('\n');
  const std::size_t column = place - (newline == std::string_view::npos ? 0 : newline + 1) + 1;
  std::string what;
  if (overflow) {
    what = fmt::format("the number {} is beyond the range of a binary64 (about 1.8e308)",
                       excerpt(last_token));
  } else {
    // Without nlohmann's prefix and position ("[json.exception.parse_error.101] parse error at
    // line 1, column 5: "), its 'last read' token cut to an excerpt.
    what = e.what();
    if (const auto at = what.find(", column "); at != std::string::npos) {
      if (const auto colon = what.find(": ", at); colon != std::string::npos) {
        what = what.substr(colon + 2);
      }
    }
    const std::string quoted = "last read: '" + last_token + "'";
    if (const auto at = what.find(quoted); at != std::string::npos) {
      what.replace(at, quoted.size(), "last read: '" + excerpt(last_token) + "'");
    }
  }
  return fmt::format("line {}, column {}: {}", lines + 1, column, what);
}

nlohmann::json parse_json(std::string_view text, std::string_view source) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception&) {
    // Parsed again to find where: the exceptions of out-of-range numbers carry no position.
  }
  ErrorLocator locator(text);
  nlohmann::json::sax_parse(text.begin(), text.end(), &locator);
  throw FileError(std::string(source), locator.error.empty() ? "not valid JSON" : locator.error);
}

}  // namespace ampbench::io
