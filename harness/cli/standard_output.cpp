#include "harness/cli/standard_output.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "harness/cli/commands.hpp"

namespace ampbench::cli {
namespace {

// Whether file descriptor `fd` is open.
bool is_open(int fd) {
  return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

}  // namespace

StandardOutput::StandardOutput() {
  ::signal(SIGPIPE, SIG_IGN);
  // Lowest first: open() takes the lowest free descriptor, so each lands where it belongs.
  for (const int fd : {0, 1, 2}) {
    if (is_open(fd)) continue;
    if (fd == 1) closed_at_start_ = true;
    const int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
  // Unsynchronised first: sync_with_stdio(false) gives std::cout a buffer of its own, which would
  // replace this one.
  std::ios::sync_with_stdio(false);
  original_ = std::cout.rdbuf(&buffer_);
}

StandardOutput::~StandardOutput() {
  std::cout.rdbuf(original_);
}

std::optional<std::string> StandardOutput::finish() {
  std::cout.flush();
  if (closed_at_start_) return "it was closed when ampbench started";
  if (buffer_.error != 0) return std::strerror(buffer_.error);
  if (!std::cout) return "the stream failed";
  return std::nullopt;
}

StandardOutput::Buffer::int_type StandardOutput::Buffer::overflow(int_type c) {
  if (!drain()) return traits_type::eof();
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  *pptr() = traits_type::to_char_type(c);
  pbump(1);
  return c;
}

int StandardOutput::Buffer::sync() {
  return drain() ? 0 : -1;
}

bool StandardOutput::Buffer::drain() {
  const char* next = pbase();
  const char* const end = pptr();
  setp(data_.data(), data_.data() + data_.size());
  // After a failure nothing more is written: the reader is gone, or the disk is full.
  if (error != 0) return false;
  while (next < end) {
    const ssize_t n = ::write(1, next, static_cast<std::size_t>(end - next));
    if (n >= 0) {
      next += n;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a non-blocking descriptor: wait for room
      pollfd out{1, POLLOUT, 0};
      ::poll(&out, 1, -1);
      continue;
    }
    error = errno;
    return false;
  }
  return true;
}

int exit_status(int command_status, StandardOutput& output) {
  const auto lost = output.finish();
  if (!lost) return command_status;
  std::cerr << "ampbench: standard output: " << *lost << "\n";
  return command_status != kExitOk ? command_status : kExitOutput;
}

}  // namespace ampbench::cli
