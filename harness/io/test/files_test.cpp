// The files: outputs are always whole (a writer killed at any moment leaves the previous file or
// the new one, never a mixture or a truncated file, and no temporary behind a finished write);
// inputs are read whole or refused with the reason; JSON errors say where, briefly.
#include "harness/io/files.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace ampbench::io {
namespace {

std::optional<std::string> write_text_file(const std::string& path, const std::string& text) {
  return write_file(path, text);
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class Files : public ::testing::Test {
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

TEST_F(Files, ReplacesTheFileAndLeavesNoTemporary) {
  const std::string path = (dir_ / "r.json").string();
  ASSERT_FALSE(write_text_file(path, "old\n"));
  ASSERT_FALSE(write_text_file(path, "new\n"));
  EXPECT_EQ(slurp(path), "new\n");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1u);
}

TEST_F(Files, AnUnwritableDirectoryIsNamedAndTheOldFileStays) {
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
TEST_F(Files, AWriterKilledMidWriteLeavesTheOldFileWhole) {
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

TEST_F(Files, AStaleTemporaryOfThisProcessIdIsReplaced) {
  const std::string path = (dir_ / "r.json").string();
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  std::filesystem::create_symlink(dir_ / "elsewhere", temporary);
  ASSERT_FALSE(write_text_file(path, "new\n"));
  EXPECT_EQ(slurp(path), "new\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "elsewhere"));  // not written through the link
  EXPECT_FALSE(std::filesystem::is_symlink(temporary));
}

// The message of the FileError `read` throws; empty when it throws none.
template <typename Read>
std::string error_of(Read read) {
  try {
    read();
  } catch (const FileError& e) {
    return e.what();
  }
  return "";
}

TEST_F(Files, ReadsAFileWhole) {
  const std::string text = std::string(200000, 'x') + "\n";
  ASSERT_FALSE(write_text_file((dir_ / "in").string(), text));
  EXPECT_EQ(read_file(dir_ / "in"), text);
  ASSERT_FALSE(write_text_file((dir_ / "empty").string(), ""));
  EXPECT_EQ(read_file(dir_ / "empty"), "");
}

TEST_F(Files, ReadsAPipeToItsEnd) {
  const auto fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo) << "through a pipe\n"; });
  EXPECT_EQ(read_file(fifo), "through a pipe\n");
  writer.join();
}

TEST_F(Files, RefusesWhatIsNotAFileWithTheReason) {
  EXPECT_EQ(error_of([&] { read_file(dir_); }), dir_.string() + ": is a directory");
  EXPECT_EQ(error_of([] { read_file("/dev/zero"); }),
            "/dev/zero: is not a regular file (a character device)");
  EXPECT_EQ(error_of([&] { read_file(dir_ / "missing"); }),
            (dir_ / "missing").string() + ": cannot open: No such file or directory");
  // A regular file that cannot be read: the read error, not an empty text or an exception of the
  // standard library.
  EXPECT_EQ(error_of([] { read_file("/proc/self/mem"); }),
            "/proc/self/mem: cannot read: Input/output error");
}

TEST_F(Files, NamesWhyAPathCannotTakeAnOutput) {
  EXPECT_EQ(output_path_problem(dir_ / "r.json"), std::nullopt);
  EXPECT_EQ(output_path_problem(dir_), "is a directory");
  EXPECT_EQ(output_path_problem("/dev/null"),
            "is not a regular file (a character device; an output is written as a new file)");
  EXPECT_EQ(output_path_problem(dir_ / "missing" / "r.json"),
            "directory " + (dir_ / "missing").string() + " does not exist");
  EXPECT_EQ(output_path_problem(""), "no file name");
}

TEST_F(Files, KnowsOneFileByItsNames) {
  ASSERT_FALSE(write_text_file((dir_ / "a").string(), "a"));
  ASSERT_FALSE(write_text_file((dir_ / "b").string(), "b"));
  std::filesystem::create_hard_link(dir_ / "a", dir_ / "hard");
  std::filesystem::create_symlink(dir_ / "a", dir_ / "soft");
  std::filesystem::create_directories(dir_ / "sub");
  EXPECT_TRUE(same_file(dir_ / "a", dir_ / "hard"));
  EXPECT_TRUE(same_file(dir_ / "a", dir_ / "soft"));
  EXPECT_TRUE(same_file(dir_ / "a", dir_ / "sub" / ".." / "a"));
  EXPECT_FALSE(same_file(dir_ / "a", dir_ / "b"));
  // Files not written yet: by their resolved paths.
  EXPECT_TRUE(same_file(dir_ / "new", dir_ / "sub" / ".." / "new"));
  EXPECT_FALSE(same_file(dir_ / "new", dir_ / "sub" / "new"));
  const auto here = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  EXPECT_TRUE(same_file("new", dir_ / "new"));
  EXPECT_TRUE(same_file("a", dir_ / "soft"));
  std::filesystem::current_path(here);
}

TEST(Excerpt, CutsLongTextsWithAnEllipsis) {
  EXPECT_EQ(excerpt("short"), "short");
  EXPECT_EQ(excerpt(std::string(60, 'x')), std::string(60, 'x'));
  EXPECT_EQ(excerpt(std::string(10 << 20, 'x')), std::string(60, 'x') + "…");
  // Never half a UTF-8 character: 'é' is two bytes, the 60th and 61st.
  EXPECT_EQ(excerpt(std::string(59, 'x') + "é" + "yyyy"), std::string(59, 'x') + "…");
}

TEST(ParseJson, ReadsAValidDocument) {
  EXPECT_EQ(parse_json(R"({"a": [1, 2.5, "x"]})", "doc")["a"][1], 2.5);
}

TEST(ParseJson, NamesTheLineAndColumnAndQuotesBriefly) {
  // The place of a syntax error is the character the parser stopped at.
  EXPECT_EQ(error_of([] { parse_json("{\n  \"a\": tru\n}", "doc.json"); }),
            "doc.json: line 2, column 11: syntax error while parsing value - invalid literal; "
            "last read: '\"a\": tru<U+000A>'");
  EXPECT_EQ(error_of([] { parse_json("[1,\n 2,, 3]", "doc.json"); }),
            "doc.json: line 2, column 4: syntax error while parsing value - unexpected ','; "
            "expected '[', '{', or a literal");
  // A long token, here a string that never ends, is quoted by its start.
  const std::string huge = "[\"" + std::string(10 << 20, 'x');
  const std::string message = error_of([&] { parse_json(huge, "big.json"); });
  EXPECT_EQ(message, "big.json: line 1, column " + std::to_string(huge.size() + 1) +
                         ": syntax error while parsing value - invalid string: missing closing "
                         "quote; last read: '\"" +
                         std::string(59, 'x') + "…'");
  EXPECT_EQ(error_of([] { parse_json("", "empty.json"); }),
            "empty.json: line 1, column 1: syntax error while parsing value - unexpected end of "
            "input; expected '[', '{', or a literal");
}

TEST(ParseJson, NamesNumbersBeyondBinary64) {
  EXPECT_EQ(error_of([] { parse_json("{\"x\": 1e400}", "r.json"); }),
            "r.json: line 1, column 7: the number 1e400 is beyond the range of a binary64 (about "
            "1.8e308)");
  const std::string digits(1000, '7');
  const std::string message = error_of([&] { parse_json("[\n" + digits + "]", "r.json"); });
  EXPECT_EQ(message, "r.json: line 2, column 1: the number " + digits.substr(0, 60) +
                         "… is beyond the range of a binary64 (about 1.8e308)");
}

}  // namespace
}  // namespace ampbench::io
