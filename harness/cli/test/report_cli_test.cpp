// End-to-end tests of `ampbench report`: Markdown on standard output or in a file, JUnit XML, the
// HTML page, and every way the command line can be wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::Outcome;
using ampbench::cli::test::slurp;
using ampbench::cli::test::temp_path;

std::string write(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

const char* const kResult = R"({"schema": "ampbench.result/1", "suite": "s", "shard": "0/1",
  "environment": {}, "records": [
    {"key": "audit/add/4x4/fp16/normal/seed=1", "kind": "audit", "status": "pass", "seconds": 0.5,
     "breaches": [], "metrics": {"normwise_rel_error": 0.0001}},
    {"key": "audit/mul/4x4/fp16/normal/seed=1", "kind": "audit", "status": "fail", "seconds": 0.25,
     "breaches": ["mul fp16: normwise_rel_error 0.1 > 0.01"], "metrics": {}}]})";

TEST(ReportCli, MarkdownOnStandardOutputAndJunitInAFile) {
  const std::string result = write("result.json", kResult);
  const Outcome md = ampbench("report " + result);
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_NE(md.out.find("| audit/mul/4x4/fp16/normal/seed=1 | audit | **FAIL** |  | mul fp16: "
                        "normwise_rel_error 0.1 > 0.01 |"),
            std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("2 case(s), 1 failed."), std::string::npos);
  const std::string junit = temp_path("junit.xml");
  const std::string markdown = temp_path("report.md");
  const Outcome files = ampbench("report " + result + " --junit " + junit + " --md " + markdown);
  ASSERT_EQ(files.status, 0) << files.err;
  EXPECT_EQ(files.out, "");
  EXPECT_EQ(slurp(markdown), md.out);
  const std::string xml = slurp(junit);
  EXPECT_NE(
      xml.find("<testsuite name=\"s\" tests=\"2\" failures=\"1\" errors=\"0\" time=\"0.750\">"),
      std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure message=\"mul fp16: normwise_rel_error 0.1 &gt; 0.01\">"),
            std::string::npos);
  for (const auto& path : {result, junit, markdown}) std::remove(path.c_str());
}

TEST(ReportCli, HtmlPageInAFile) {
  const std::string result = write("result.json", kResult);
  const std::string html = temp_path("report.html");
  const Outcome run = ampbench("report " + result + " --html " + html);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "");  // an output file replaces the Markdown on standard output
  const std::string page = slurp(html);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<tr class=\"fail\"><td class=\"key\">audit/mul/4x4/fp16/normal/seed=1</td>"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("</html>"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(html + ".tmp"));
  std::remove(result.c_str());
  std::remove(html.c_str());
}

// Records of one suite from different devices: one comparison page and its Markdown. The devices
// here are built for the test and named so.
std::string on_device(const std::string& name, const std::string& device, double error,
                      const std::string& suite = "s") {
  return write(
      name, R"({"schema": "ampbench.result/1", "suite": ")" + suite +
                R"(", "shard": "0/1", "environment": {"device": )" + device +
                R"(}, "records": [{"key": "audit/add/4x4/fp16/normal/seed=1/backend=cuda", "kind":
      "audit", "status": "pass", "breaches": [], "metrics": {"normwise_rel_error": )" +
                std::to_string(error) + "}}]}");
}

const char* const kFixtureA = R"({"kind": "gpu", "name": "TEST FIXTURE GPU A"})";
const char* const kFixtureB = R"({"kind": "gpu", "name": "TEST FIXTURE GPU B"})";

// A failed report writes nothing: no page, no temporary file. A comparison
// of devices refuses the same device twice, records of different suites and a single record.
TEST(ReportCli, HtmlErrorsWriteNothing) {
  const std::string result = write("html-ok.json", kResult);
  const std::string bad = write("html-bad.json", "{\"schema\": \"ampbench.result/1\"");
  const std::string html = temp_path("never.html");
  const std::string directory = temp_path("a-directory");
  std::filesystem::create_directory(directory);
  const std::string a = on_device("cmp-a.json", kFixtureA, 0.001);
  const std::string b = on_device("cmp-b.json", kFixtureB, 0.001);
  const std::string a2 = on_device("cmp-a2.json", kFixtureA, 0.002);
  const std::string other = on_device("cmp-other.json", kFixtureB, 0.001, "another");
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"report " + bad + " --html " + html,
       "ampbench report: " + bad +
           ": line 1, column 31: syntax error while parsing object - unexpected end of input"},
      {"report " + result + " /nonexistent-ampbench.json --html " + html,
       "ampbench report: /nonexistent-ampbench.json: cannot open: No such file or directory"},
      {"report " + result + " --html /nonexistent-ampbench-dir/r.html",
       "ampbench report: --html /nonexistent-ampbench-dir/r.html: directory "
       "/nonexistent-ampbench-dir does not exist"},
      // A path that is a directory cannot be replaced by a file: found before anything is read.
      {"report " + result + " --html " + directory,
       "ampbench report: --html " + directory + ": is a directory"},
      {"report " + a + " " + b + " " + a2 + " --html " + html,
       "ampbench report: " + a2 + ": the same device (TEST FIXTURE GPU A) as " + a +
           ": give each device once"},
      {"report " + a + " " + other + " --html " + html,
       "ampbench report: " + other + ": a result of suite 'another', not of suite 's' as " + a},
      {"report " + a + " --side-by-side --html " + html,
       "ampbench report: a comparison of devices needs two or more result files"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench(c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << "\n" << run.err;
    EXPECT_EQ(run.out, "") << c.args;
    EXPECT_FALSE(std::filesystem::exists(html)) << c.args;
    const std::string temporary = std::filesystem::path(directory).filename().string() + ".tmp";
    for (const auto& entry :
         std::filesystem::directory_iterator(std::filesystem::path(directory).parent_path())) {
      EXPECT_FALSE(entry.path().filename().string().starts_with(temporary)) << c.args;
    }
  }
  EXPECT_TRUE(std::filesystem::is_directory(directory));
  for (const auto& path : {result, bad, a, b, a2, other}) std::remove(path.c_str());
  std::filesystem::remove(directory);
}

TEST(ReportCli, EveryBadInputIsNamed) {
  const std::string not_result = write("audit.json", R"({"schema": "ampbench.audit/1"})");
  const std::string result = write("ok.json", kResult);
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"report", "ampbench report: give at least one result file"},
      {"report /nonexistent-ampbench.json",
       "ampbench report: /nonexistent-ampbench.json: cannot open: No such file or directory"},
      {"report " + not_result, "ampbench report: " + not_result},
      {"report " + result + " --junit /nonexistent-ampbench-dir/j.xml",
       "ampbench report: --junit /nonexistent-ampbench-dir/j.xml: directory "
       "/nonexistent-ampbench-dir does not exist"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench(c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << "\n" << run.err;
    EXPECT_EQ(run.out, "") << c.args;
  }
  std::remove(not_result.c_str());
  std::remove(result.c_str());
}

TEST(ReportCli, RecordsOfDifferentDevicesAreOneComparison) {
  const std::string a = on_device("device-a.json", kFixtureA, 0.001);
  const std::string b = on_device("device-b.json", kFixtureB, 0.004);
  const std::string html = temp_path("devices.html");
  const std::string md = temp_path("devices.md");
  const Outcome run = ampbench("report " + a + " " + b + " --html " + html + " --md " + md);
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string markdown = slurp(md);
  EXPECT_EQ(markdown.rfind("# ampbench device comparison · s\n", 0), 0u) << markdown;
  EXPECT_NE(markdown.find("| audit/add/4x4/fp16/normal/seed=1 | TEST FIXTURE GPU B | PASS | 0.004 "
                          "| not recorded | not recorded | 4 | normwise_rel_error |"),
            std::string::npos)
      << markdown;
  const std::string page = slurp(html);
  EXPECT_NE(page.find("<h2>Devices</h2>"), std::string::npos);
  EXPECT_NE(page.find("add: normwise error per case, a bar per device"), std::string::npos);
  // Without an output option the comparison's Markdown goes to standard output.
  EXPECT_EQ(ampbench("report " + a + " " + b).out, markdown);
  for (const auto& path : {a, b, html, md}) std::remove(path.c_str());
}

// A real CPU record (the checked-in nightly baseline) beside itself: a row per case and column.
TEST(ReportCli, ARealRecordBesideItself) {
  const std::string baseline = AMPBENCH_SOURCE_DIR "/reports/baselines/nightly-cpu.json";
  const std::string html = temp_path("self.html");
  const Outcome run = ampbench("report " + baseline + " " + baseline + " --side-by-side --html " +
                               html + " --md " + temp_path("self.md"));
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string page = slurp(html);
  const nlohmann::json record = nlohmann::json::parse(slurp(baseline));
  std::size_t audits = 0;
  for (const auto& r : record["records"]) audits += r["kind"] == "audit";
  std::size_t rows = 0;
  for (auto at = page.find("<td class=\"device\">#"); at != std::string::npos;
       at = page.find("<td class=\"device\">#", at + 1)) {
    ++rows;
  }
  EXPECT_GT(audits, 100u);
  // Each audit case twice, and each training and profile policy twice too.
  EXPECT_GE(rows, 2 * audits);
  EXPECT_NE(page.find("0 where the devices disagree"), std::string::npos);
  EXPECT_NE(page.find(" · " + baseline), std::string::npos);
  std::remove(html.c_str());
  std::remove(temp_path("self.md").c_str());
}

}  // namespace
