// End-to-end tests of legal inputs whose reference once failed, and of failures that are not the
// input's fault: the softmax family near binary32's overflow threshold gets its reference (an
// exact result within e^-1e38 of a value of the format, reference/mp/asymptotic.hpp); layer and
// batch norm over constant rows get theirs (beta, exactly); batch norm over one value per channel
// is an invalid shape, refused before any work; running out of memory is an internal error, exit
// 1 with a message, never an abort.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::Outcome;
using ampbench::cli::test::slurp;
using ampbench::cli::test::temp_path;

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// The reference column of `ampbench eval`'s table.
std::vector<std::string> references(const std::string& out) {
  std::vector<std::string> column;
  std::istringstream lines(out);
  bool table = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("index")) {
      table = true;
      continue;
    }
    if (!table) continue;
    std::istringstream words(line);
    std::string index, output, reference;
    words >> index >> output >> reference;
    column.push_back(reference);
  }
  return column;
}

TEST(ReferenceCli, TheSoftmaxFamilyNearOverflowGetsItsReference) {
  // Every op that takes exp(x - max) of a row, under formats whose inputs make e^-1e38 (binary32,
  // bfloat16) and e^-1e5 (binary16); small shapes. An audit case may fail (the emulation
  // overflows where the exact result does not): that is a finding, exit 1, not an error.
  for (const char* op : {"softmax", "log_softmax", "logsumexp", "softmax_backward",
                         "log_softmax_backward", "cross_entropy", "cross_entropy_backward"}) {
    const Outcome run = ampbench(std::string("audit --op ") + op +
                                 " --shape 4x64 --dist near-overflow --policy fp32,bf16,fp16 "
                                 "--budgets none");
    EXPECT_TRUE(run.status == 0 || run.status == 1) << op << ": " << run.status << "\n" << run.err;
    EXPECT_EQ(run.err, "") << op;
    EXPECT_NE(run.out.find("3 case(s)"), std::string::npos) << op << "\n" << run.out;
  }
  for (const char* op :
       {"attention", "attention_backward_q", "attention_backward_k", "attention_backward_v"}) {
    const Outcome attention = ampbench(std::string("audit --op ") + op +
                                       " --shape 4x16x8 --dist near-overflow --policy "
                                       "fp32,bf16,fp16 --budgets none");
    EXPECT_TRUE(attention.status == 0 || attention.status == 1) << op << "\n" << attention.err;
    EXPECT_EQ(attention.err, "") << op;
  }
}

TEST(ReferenceCli, SoftmaxNearOverflowHasTheHandDerivedReference) {
  // softmax(0x1.1p127, -0x1.1p127) = (1 / (1 + e), e / (1 + e)) with e = e^-0x1.1p128: just below
  // 1, and a positive value below every subnormal; in binary32, round to nearest: 1 and 0.
  const std::string inputs = write_temp("softmax.json", R"({"x": [["0x1.1p127", "-0x1.1p127"]]})");
  const Outcome softmax = ampbench("eval --op softmax --policy fp32 --inputs " + inputs);
  ASSERT_EQ(softmax.status, 0) << softmax.err;
  EXPECT_EQ(references(softmax.out), (std::vector<std::string>{"0x1p+0", "0x0p+0"}));
  // logsumexp = 0x1.1p127 + log1p(e): rounds to the maximum.
  const Outcome logsumexp = ampbench("eval --op logsumexp --policy fp32 --inputs " + inputs);
  ASSERT_EQ(logsumexp.status, 0) << logsumexp.err;
  EXPECT_EQ(references(logsumexp.out), (std::vector<std::string>{"0x1.1p+127"}));
  // log_softmax = (-log1p(e), -0x1.1p128 - log1p(e)): -0, and beyond binary32's range.
  const Outcome log_softmax = ampbench("eval --op log_softmax --policy fp32 --inputs " + inputs);
  ASSERT_EQ(log_softmax.status, 0) << log_softmax.err;
  EXPECT_EQ(references(log_softmax.out), (std::vector<std::string>{"-0x0p+0", "-inf"}));
  std::remove(inputs.c_str());
}

TEST(ReferenceCli, ConstantRowsOfLayerAndBatchNormAreBetaExactly) {
  // One column: x - mean = 0 exactly, so y = beta, whatever 1 / sqrt(eps) rounds to.
  const std::string one = write_temp("ln1.json", R"({"x": [[3]], "gamma": [2], "beta": [0.1]})");
  const Outcome single = ampbench("eval --op layer_norm --policy fp32 --inputs " + one);
  ASSERT_EQ(single.status, 0) << single.err;
  EXPECT_EQ(references(single.out), (std::vector<std::string>{"0x1.99999ap-4"}));  // fp32(0.1)
  const std::string row =
      write_temp("ln3.json", R"({"x": [[5, 5, 5]], "gamma": [1, 2, 3], "beta": [0.25, -1, 3]})");
  const Outcome constant = ampbench("eval --op layer_norm --policy fp32 --inputs " + row);
  ASSERT_EQ(constant.status, 0) << constant.err;
  EXPECT_EQ(references(constant.out), (std::vector<std::string>{"0x1p-2", "-0x1p+0", "0x1.8p+1"}));
  // Batch norm: channel 0 is constant (2, 2): beta; channel 1 is not.
  const std::string batch =
      write_temp("bn.json", R"({"x": [[2, 5], [2, 7]], "gamma": [1, 1], "beta": [0.5, 0]})");
  const Outcome bn = ampbench("eval --op batch_norm --policy fp32 --inputs " + batch);
  ASSERT_EQ(bn.status, 0) << bn.err;
  const std::vector<std::string> got = references(bn.out);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], "0x1p-1");
  EXPECT_EQ(got[2], "0x1p-1");
  for (const auto& path : {one, row, batch}) std::remove(path.c_str());
  // And the audits: 1x1, a single column, constant rows.
  for (const char* args : {"--op layer_norm --shape 1x1", "--op layer_norm --shape 16x1",
                           "--op layer_norm --shape 8x16 --dist constant:value=3",
                           "--op batch_norm --shape 8x4 --dist constant:value=3"}) {
    const Outcome audit =
        ampbench(std::string("audit ") + args + " --policy fp32,bf16 --budgets none");
    EXPECT_EQ(audit.status, 0) << args << "\n" << audit.err;
    EXPECT_EQ(audit.err, "") << args;
  }
}

TEST(ReferenceCli, BatchNormOfOneValuePerChannelIsAnInvalidShape) {
  const Outcome audit = ampbench("audit --op batch_norm --shape 1x4");
  EXPECT_EQ(audit.status, 2);
  EXPECT_EQ(audit.err,
            "ampbench audit: --shape: batch_norm shape '1x4': batch norm in training needs more "
            "than 1 value per channel (N >= 2)\n");
  EXPECT_EQ(audit.out, "");
  const std::string one =
      write_temp("bn1.json", R"({"x": [[2, 5]], "gamma": [1, 1], "beta": [0, 0]})");
  const Outcome eval = ampbench("eval --op batch_norm --policy fp32 --inputs " + one);
  std::remove(one.c_str());
  EXPECT_EQ(eval.status, 2);
  EXPECT_NE(eval.err.find("batch_norm shape '1x2': batch norm in training needs more than 1 "
                          "value per channel (N >= 2)"),
            std::string::npos)
      << eval.err;
  EXPECT_EQ(eval.out, "");
}

// ampbench with its data limited to `kilobytes` (RLIMIT_DATA: the heap and private anonymous
// mappings, not the shared libraries' read-only mappings, which in a CUDA build are larger than
// any limit of the address space that these tests could set).
Outcome ampbench_limited(const std::string& args, long kilobytes) {
  const std::string out = temp_path("limited.out");
  const std::string err = temp_path("limited.err");
  const std::string command = "ulimit -d " + std::to_string(kilobytes) + "; " +
                              std::string(AMPBENCH_EXE) + " " + args + " </dev/null >" + out +
                              " 2>" + err;
  const int raw = std::system(command.c_str());
  Outcome run{slurp(out), slurp(err), WIFEXITED(raw) ? WEXITSTATUS(raw) : -1};
  std::remove(out.c_str());
  std::remove(err.c_str());
  return run;
}

TEST(ReferenceCli, RunningOutOfMemoryIsAnInternalErrorNotAnAbort) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan's shadow memory exceeds any data limit and its allocator reports a failed "
                  "allocation itself; this test runs in the unsanitized builds";
#endif
  // 1024 micro-batches of 4096 samples take 1.1 GB, within the limit on their size but beyond
  // 600 MB of data: std::bad_alloc escapes the command, and main reports it.
  const Outcome train =
      ampbench_limited("train --steps 1 --policy fp32 --batch 4096 --accumulate 1024", 600000);
  EXPECT_EQ(train.status, 1) << train.err;
  EXPECT_EQ(train.err, "ampbench: internal error: out of memory (std::bad_alloc)\n");
  // The audit's output of 8192 x 8192 values takes 512 MB: it could not compute the case.
  const Outcome audit =
      ampbench_limited("audit --op gemm --shape 8192x8192x1 --budgets none", 400000);
  EXPECT_EQ(audit.status, 1) << audit.err;
  EXPECT_EQ(audit.err, "ampbench audit: gemm under fp32: could not compute: std::bad_alloc\n");
}

}  // namespace
