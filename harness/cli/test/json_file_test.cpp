// Result files are always whole: a writer killed at any moment leaves the previous file or the new
// one, never a mixture or a truncated file, and no temporary behind a finished write.
#include "harness/cli/json_file.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace ampbench::cli {
namespace {

std::string slurp(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class WriteTextFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ampbench-write-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(WriteTextFile, ReplacesTheFileAndLeavesNoTemporary) {
  const std::string path = (dir_ / "r.json").string();
  ASSERT_FALSE(write_text_file(path, "old\n"));
  ASSERT_FALSE(write_text_file(path, "new\n"));
  EXPECT_EQ(slurp(path), "new\n");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1u);
}

TEST_F(WriteTextFile, AnUnwritableDirectoryIsNamedAndTheOldFileStays) {
  const std::string path = (dir_ / "r.json").string();
  ASSERT_FALSE(write_text_file(path, "old\n"));
  const auto problem = write_text_file((dir_ / "missing" / "r.json").string(), "new\n");
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("cannot write " + (dir_ / "missing" / "r.json").string() + ".tmp."),
            std::string::npos)
      << *problem;
  EXPECT_EQ(slurp(path), "old\n");
}

// A child process rewrites a large file and is killed with SIGKILL while it writes. Whenever the
// kill lands, the file must be exactly the old text or exactly the new one. The test repeats until
// at least one kill has landed in the middle of a write (the temporary seen partly written), so
// that it cannot pass by never interrupting anything.
TEST_F(WriteTextFile, AWriterKilledMidWriteLeavesTheOldFileWhole) {
  const std::string path = (dir_ / "r.json").string();
  const std::string old_text = std::string(1 << 20, 'o') + "\n";
  const std::string new_text = std::string(std::size_t{64} << 20, 'n') + "\n";
  int interrupted = 0;
  for (int attempt = 0; attempt < 50 && interrupted < 3; ++attempt) {
    ASSERT_FALSE(write_text_file(path, old_text));
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      write_text_file(path, new_text);
      ::_exit(0);
    }
    const std::string temporary = path + ".tmp." + std::to_string(child);
    // Wait until the child has written part of its temporary, then kill it at once.
    bool partly_written = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(temporary, ec);
      if (!ec && size > 0 && size < new_text.size()) {
        partly_written = true;
        break;
      }
      int status = 0;
      if (::waitpid(child, &status, WNOHANG) == child) break;  // finished before we saw it
    }
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    const std::string now = slurp(path);
    ASSERT_TRUE(now == old_text || now == new_text)
        << "a killed writer left " << now.size() << " bytes";
    if (partly_written && now == old_text) ++interrupted;
    std::filesystem::remove(temporary);
  }
  EXPECT_GE(interrupted, 3) << "no kill landed in the middle of a write";
}

}  // namespace
}  // namespace ampbench::cli
