#include "harness/cli/json_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ampbench::cli {

std::optional<std::string> json_path_problem(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent)) {
    return fmt::format("directory {} does not exist", parent.string());
  }
  return std::nullopt;
}

std::optional<std::string> write_text_file(const std::string& path, const std::string& text) {
  // Next to the file (the same file system, so that the rename is atomic) and unique to this
  // process, so that two writers never write into each other's temporary.
  const std::string temporary = fmt::format("{}.tmp.{}", path, ::getpid());
  const auto fail = [&](const char* what) {
    const std::string message =
        fmt::format("cannot {} {} ({})", what, temporary, std::strerror(errno));
    ::unlink(temporary.c_str());
    return message;
  };
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("cannot write {} ({})", temporary, std::strerror(errno));
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  // On the disk before the rename: a machine that crashes after it finds the new file whole.
  if (::fsync(fd) != 0) {
    ::close(fd);
    return fail("flush");
  }
  if (::close(fd) != 0) return fail("close");
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string message =
        fmt::format("cannot rename {} to it ({})", temporary, std::strerror(errno));
    ::unlink(temporary.c_str());
    return message;
  }
  // The directory entry too, so that the rename itself survives a crash.
  const auto parent = std::filesystem::path(path).parent_path();
  const int directory = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY);
  if (directory >= 0) {
    ::fsync(directory);
    ::close(directory);
  }
  return std::nullopt;
}

std::optional<std::string> write_json_file(const std::string& path,
                                           const nlohmann::json& document) {
  return write_text_file(path, document.dump(2) + "\n");
}

}  // namespace ampbench::cli
