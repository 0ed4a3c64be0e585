// The one reader of numeric option values (options.hpp): strict base-10 text, finite binary64
// numbers, each with its range, and the messages that name the command and the option.
#include "harness/cli/options.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace ampbench::cli::options {
namespace {

// The complaint parse gives for `text`, or "" when it takes it.
template <class Parse>
std::string complaint(Parse parse, const std::string& text) {
  try {
    parse(text);
    return "";
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

TEST(Options, UnsignedValuesAreBase10DigitsInRange) {
  const Unsigned batch{1, 65536};
  EXPECT_EQ(parse_unsigned("64", batch), 64u);
  EXPECT_EQ(parse_unsigned("010", batch), 10u);  // decimal, not octal
  EXPECT_EQ(parse_unsigned("65536", batch), 65536u);
  EXPECT_EQ(parse_unsigned("18446744073709551615", Unsigned{}), 18446744073709551615u);
  const auto parse = [&](const std::string& text) { return parse_unsigned(text, batch); };
  EXPECT_EQ(complaint(parse, "-1"), "-1 is not in [1, 65536]");
  EXPECT_EQ(complaint(parse, "0"), "0 is not in [1, 65536]");
  EXPECT_EQ(complaint(parse, "65537"), "65537 is not in [1, 65536]");
  EXPECT_EQ(complaint(parse, "18446744073709551616"), "18446744073709551616 is not in [1, 65536]");
  EXPECT_EQ(complaint([](const std::string& t) { return parse_unsigned(t, Unsigned{}); },
                      "18446744073709551616"),
            "18446744073709551616 is not in [0, 18446744073709551615]");
  for (const char* text : {"0x40", "1e3", "+5", "-0", " 5", "5 ", "5x", "", "-", "1.0", "٣"}) {
    EXPECT_EQ(complaint(parse, text),
              "'" + std::string(text) + "' is not a base-10 integer (digits only)")
        << text;
  }
  // A pasted page is cut in the message.
  const std::string long_text(100000, '7');
  EXPECT_EQ(complaint(parse, long_text),
            std::string(60, '7') + "... (100000 characters) is not in [1, 65536]");
}

TEST(Options, IntegerValuesMayHaveAMinusSign) {
  const Integer bits{64, 4096};
  EXPECT_EQ(parse_integer("113", bits), 113);
  EXPECT_EQ(parse_integer("-5", Integer{}), -5);
  const auto parse = [&](const std::string& text) { return parse_integer(text, bits); };
  EXPECT_EQ(complaint(parse, "32"), "32 is not in [64, 4096]");
  EXPECT_EQ(complaint(parse, "-1"), "-1 is not in [64, 4096]");
  EXPECT_EQ(complaint(parse, "9223372036854775808"), "9223372036854775808 is not in [64, 4096]");
  EXPECT_EQ(complaint(parse, "-99999999999999999999"),
            "-99999999999999999999 is not in [64, 4096]");
  for (const char* text : {"+64", "0x40", "64.0", "1e2", "--5", ""}) {
    EXPECT_EQ(complaint(parse, text),
              "'" + std::string(text) + "' is not a base-10 integer (digits, a leading - at most)")
        << text;
  }
}

TEST(Options, FiniteValuesAreBinary64NumbersInRange) {
  constexpr double kLargest = std::numeric_limits<double>::max();
  const Finite at_least_zero{0.0, kLargest, false, false};
  const Finite open_unit{0.0, 1.0, true, true};
  EXPECT_EQ(parse_finite("0.5", open_unit), 0.5);
  EXPECT_EQ(parse_finite("1e-3", at_least_zero), 1e-3);
  EXPECT_EQ(parse_finite("0", at_least_zero), 0.0);
  EXPECT_EQ(parse_finite("1e300", at_least_zero), 1e300);
  // Read correctly rounded, as from_chars does: 0.1 is binary64's nearest.
  EXPECT_EQ(parse_finite("0.1", at_least_zero), 0x1.999999999999ap-4);
  const auto lr = [&](const std::string& text) { return parse_finite(text, at_least_zero); };
  EXPECT_EQ(complaint(lr, "-1"), "-1 is not a finite number >= 0");
  EXPECT_EQ(complaint(lr, "nan"), "nan is not a finite number");
  EXPECT_EQ(complaint(lr, "inf"), "inf is not a finite number");
  EXPECT_EQ(complaint(lr, "-infinity"), "-infinity is not a finite number");
  EXPECT_EQ(complaint(lr, "1e400"), "1e400 is beyond the range of a binary64 number");
  EXPECT_EQ(complaint(lr, "1e-400"), "1e-400 is beyond the range of a binary64 number");
  for (const char* text : {"0x1p3", "+1", "1e", "one", " 1", "1 ", ""}) {
    EXPECT_EQ(complaint(lr, text), "'" + std::string(text) + "' is not a decimal number") << text;
  }
  const auto backoff = [&](const std::string& text) { return parse_finite(text, open_unit); };
  EXPECT_EQ(complaint(backoff, "1"), "1 is not in (0, 1)");
  EXPECT_EQ(complaint(backoff, "0"), "0 is not in (0, 1)");
  const auto growth = [](const std::string& text) {
    return parse_finite(text, Finite{1.0, std::numeric_limits<double>::max(), true, false});
  };
  EXPECT_EQ(complaint(growth, "1"), "1 is not a finite number > 1");
}

// A command line with one subcommand holding one option of each kind.
struct Line {
  CLI::App app{"test", "ampbench"};
  CLI::App* train = app.add_subcommand("train", "");
  std::uint64_t batch = 64;
  int bits = 113;
  double lr = 1e-3;
  std::string out;
  bool flag = false;
  Line() {
    add_unsigned(*train, "--batch", batch, {1, 65536}, "")->capture_default_str();
    add_integer(*train, "--reference-bits", bits, {64, 4096}, "")->capture_default_str();
    add_finite(*train, "--lr", lr, {0.0, std::numeric_limits<double>::max(), false, false}, "");
    train->add_option("--out", out, "");
    train->add_flag("--flag", flag, "");
    refuse_empty_values(app);
  }
  // The OptionError's message, or "" when the line parses.
  std::string parse(std::vector<std::string> args) {
    args.insert(args.begin(), "train");
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app.parse(reversed);
      return "";
    } catch (const OptionError& e) {
      return e.what();
    }
  }
};

TEST(Options, BadValuesStopTheParseNamingCommandAndOption) {
  Line line;
  EXPECT_EQ(line.parse({"--batch", "128", "--reference-bits", "64", "--lr", "0.5", "--flag"}), "");
  EXPECT_EQ(line.batch, 128u);
  EXPECT_EQ(line.bits, 64);
  EXPECT_EQ(line.lr, 0.5);
  EXPECT_EQ(Line().parse({"--batch", "-1"}), "ampbench train: --batch: -1 is not in [1, 65536]");
  EXPECT_EQ(Line().parse({"--reference-bits", "99999999999"}),
            "ampbench train: --reference-bits: 99999999999 is not in [64, 4096]");
  EXPECT_EQ(Line().parse({"--lr", "nan"}), "ampbench train: --lr: nan is not a finite number");
  EXPECT_EQ(Line().parse({"--out", ""}),
            "ampbench train: --out: the value is empty (leave the option out for its default)");
  EXPECT_EQ(Line().parse({"--batch", ""}),
            "ampbench train: --batch: the value is empty (leave the option out for its default)");
}

TEST(Options, HelpKeepsTheTypeNamesAndDefaults) {
  Line line;
  const std::string help = line.train->help();
  EXPECT_NE(help.find("--batch UINT=64"), std::string::npos) << help;
  EXPECT_NE(help.find("--reference-bits INT=113"), std::string::npos) << help;
  EXPECT_NE(help.find("--lr FLOAT"), std::string::npos) << help;
}

}  // namespace
}  // namespace ampbench::cli::options
