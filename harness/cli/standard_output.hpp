// Standard output that cannot fail unnoticed. SIGPIPE is ignored, so that a reader that goes away
// (`ampbench run ... | head -1`) makes writes fail with EPIPE instead of killing the command: the
// command keeps going and writes its files; std::cout writes through a buffer that keeps the first
// write error. A standard stream closed at start-up (`>&-`) is reopened on /dev/null, so that no
// file the command opens lands on it, and a closed standard output is reported like a failed one.
// After the command, finish() flushes and names what went wrong; main then exits with
// kExitOutput unless the command failed for its own reason.
#pragma once

#include <array>
#include <optional>
#include <streambuf>
#include <string>

namespace ampbench::cli {

class StandardOutput {
 public:
  // Call first in main, before any file is opened.
  StandardOutput();
  ~StandardOutput();  // std::cout's own buffer back
  StandardOutput(const StandardOutput&) = delete;
  StandardOutput& operator=(const StandardOutput&) = delete;

  // Flushes std::cout; why the output was lost ("Broken pipe", "No space left on device", "it was
  // closed when ampbench started"), or nothing.
  std::optional<std::string> finish();

 private:
  // Writes to file descriptor 1; the first write error is kept, and the stream fails.
  class Buffer : public std::streambuf {
   public:
    Buffer() { setp(data_.data(), data_.data() + data_.size()); }
    int error = 0;  // errno of the first failed write; 0: none

   protected:
    int_type overflow(int_type c) override;
    int sync() override;

   private:
    bool drain();
    std::array<char, 1 << 15> data_{};
  };

  Buffer buffer_;
  std::streambuf* original_ = nullptr;
  bool closed_at_start_ = false;
};

// The status main returns: the command's own when it failed, otherwise kExitOutput when the
// standard output was lost (with "ampbench: standard output: REASON" on standard error).
int exit_status(int command_status, StandardOutput& output);

}  // namespace ampbench::cli
