// What the end-to-end tests of the command line share: running the real binary (AMPBENCH_EXE) with
// arguments and standard input, and reading tab-separated output.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ampbench::cli::test {

struct Outcome {
  std::string out;
  std::string err;
  int status = -1;
};

inline std::string slurp(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// `text` written to a file of this test process, TempDir()/ampbench-PID-NAME, which is removed when
// the process ends (also after a failed assertion returned early). Writing the same name again
// replaces the file.
inline std::string temp_file(const std::string& name, const std::string& text) {
  struct Files {
    std::vector<std::string> paths;
    ~Files() {
      for (const auto& path : paths) std::remove(path.c_str());
    }
  };
  static Files files;
  const std::string path =
      ::testing::TempDir() + "ampbench-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path) << text;
  if (std::find(files.paths.begin(), files.paths.end(), path) == files.paths.end()) {
    files.paths.push_back(path);
  }
  return path;
}

// Runs ampbench with `args` (already shell-quoted where needed) and `input` on stdin.
inline Outcome ampbench(const std::string& args, const std::string& input = "") {
  char dir_template[] = "/tmp/ampbench-cli-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  std::ofstream(dir + "/in") << input;
  const std::string command = std::string(AMPBENCH_EXE) + " " + args + " <" + dir + "/in >" + dir +
                              "/out 2>" + dir + "/err";
  const int raw = std::system(command.c_str());
  Outcome run{slurp(dir + "/out"), slurp(dir + "/err"), WIFEXITED(raw) ? WEXITSTATUS(raw) : -1};
  std::system(("rm -rf " + dir).c_str());
  return run;
}

// Runs a shell script for what ampbench() cannot express: other redirections (a closed standard
// output `>&-`, `>/dev/full`), pipelines (`| head -1`), commands in the background. In the script
// $AMPBENCH is the binary and $DIR a fresh directory, the current one; the outcome's out and err
// are the files $DIR/out and $DIR/err, and its status the number the script writes to
// $DIR/status (a pipeline's first command: `{ $AMPBENCH ...; echo $? >status; } | head -1`),
// otherwise the script's own. A script that runs past `timeout_s` is killed (status 124), so that
// a hang fails the test instead of stopping it.
inline Outcome shell(const std::string& script, int timeout_s = 60) {
  char dir_template[] = "/tmp/ampbench-sh-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  std::ofstream(dir + "/script.sh") << script;
  const std::string command = "cd " + dir + " && AMPBENCH=" + AMPBENCH_EXE + " DIR=" + dir +
                              " timeout -k 5 " + std::to_string(timeout_s) + " sh " + dir +
                              "/script.sh";
  const int raw = std::system(command.c_str());
  Outcome run{slurp(dir + "/out"), slurp(dir + "/err"), WIFEXITED(raw) ? WEXITSTATUS(raw) : -1};
  if (std::ifstream status(dir + "/status"); status) status >> run.status;
  std::system(("rm -rf " + dir).c_str());
  return run;
}

// A path under /tmp unique to this test process: /tmp/ampbench-test-PID-NAME.
inline std::string temp_path(const std::string& name) {
  return "/tmp/ampbench-test-" + std::to_string(getpid()) + "-" + name;
}

// `ampbench ARGS --json FILE`, FILE the temp_path of `name`: the outcome and the text of the
// record it wrote (empty when it wrote none); the file is removed.
struct RunWithRecord {
  Outcome run;
  std::string record;
};
inline RunWithRecord ampbench_with_record(const std::string& args, const std::string& name) {
  const std::string path = temp_path(name);
  RunWithRecord r{ampbench(args + " --json " + path), slurp(path)};
  std::remove(path.c_str());
  return r;
}

// The fields of each line of tab-separated text; lines starting with '#' left out when asked.
inline std::vector<std::vector<std::string>> tsv_rows(const std::string& tsv,
                                                      bool skip_comments = false) {
  std::vector<std::vector<std::string>> result;
  std::istringstream lines(tsv);
  for (std::string line; std::getline(lines, line);) {
    if (skip_comments && line.starts_with("#")) continue;
    std::vector<std::string> fields;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, '\t');) fields.push_back(cell);
    result.push_back(fields);
  }
  return result;
}

// A test with a directory of its own (named for the process, suite and test, so that concurrent
// runs never share one), removed after the test: write() puts a file there, path() names one.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() / ("ampbench-" + std::to_string(getpid()) + "-" +
                                                     test->test_suite_name() + "-" + test->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = path(name);
    std::ofstream(p) << text;
    return p;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

}  // namespace ampbench::cli::test
