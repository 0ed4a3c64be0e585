// The chart helper of the HTML report: tick choice, the scales' mapping, axis ranges, and the SVG
// of line and bar charts (points, bar heights, what a log axis cannot draw, escaping).
#include "harness/results/svg.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "harness/results/test/svg_scan.hpp"

namespace ampbench::results::svg {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The values of one attribute of every element named `element`, in order.
std::vector<double> attribute_values(const std::string& svg, const std::string& element,
                                     const std::string& attribute) {
  std::vector<double> values;
  for (const auto& text : test::attribute_texts(svg, element, attribute)) {
    values.push_back(std::stod(text));
  }
  return values;
}

TEST(Svg, EscapesMarkup) {
  EXPECT_EQ(escape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
}

TEST(Svg, LinearTicksAreOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_EQ(linear_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(linear_ticks(0, 20, 5), (std::vector<double>{0, 5, 10, 15, 20}));
  const auto fractions = linear_ticks(0.13, 0.87, 5);
  ASSERT_EQ(fractions.size(), 7u);  // 0.2, 0.3, ..., 0.8
  EXPECT_NEAR(fractions.front(), 0.2, 1e-12);
  EXPECT_NEAR(fractions.back(), 0.8, 1e-12);
  const auto around_zero = linear_ticks(-1, 1, 4);
  ASSERT_EQ(around_zero.size(), 5u);
  EXPECT_FALSE(std::signbit(around_zero[2]));  // 0, not -0
  // Beyond 2^53 steps of the tick spacing, k + 1 == k: the ticks are counted, not stepped forever
  // (found by fuzzing the report, docs/fuzzing.md).
  EXPECT_EQ(linear_ticks(1e16, 1e16 + 2, 5), (std::vector<double>{1e16, 1e16 + 2}));
}

TEST(Svg, LogTicksArePowersThinnedOnWideRanges) {
  EXPECT_EQ(log_ticks(1e-8, 1e-3, 10).size(), 6u);
  EXPECT_NEAR(log_ticks(1e-8, 1e-3, 10).front(), 1e-8, 1e-20);
  EXPECT_EQ(log_ticks(2, 9, 10), std::vector<double>{});  // no power of ten inside
  EXPECT_EQ(log_ticks(1, 1 << 20, 2), (std::vector<double>{1, 8, 64, 512, 4096, 32768, 262144}));
  EXPECT_LE(log_ticks(1e-30, 1, 10).size(), 8u);
  EXPECT_THROW(log_ticks(0, 1, 10), std::invalid_argument);
}

// The room around the values stays within the positive binary64 range: below 1e-320 a power of
// ten is 0, above 1e308 it is inf (found by fuzzing the report, docs/fuzzing.md).
TEST(Svg, LogDomainsOfExtremeValuesStayFinite) {
  for (const auto& [lo, hi] : {std::pair{5e-324, 1e-300}, std::pair{1.0, 1e308},
                               std::pair{5e-324, std::numeric_limits<double>::max()}}) {
    const Domain d = domain_of(lo, hi, 10, false);
    EXPECT_GT(d.lo, 0);
    EXPECT_LE(d.lo, lo);
    EXPECT_TRUE(std::isfinite(d.hi));
    EXPECT_GE(d.hi, hi);
    EXPECT_FALSE(d.ticks.empty());
  }
}

TEST(Svg, TickLabelsAreShort) {
  EXPECT_EQ(tick_label(0.001, 10), "0.001");
  EXPECT_EQ(tick_label(1e-5, 10), "1e-5");
  EXPECT_EQ(tick_label(2.5e-7, 10), "2.5e-7");
  EXPECT_EQ(tick_label(1e5, 10), "1e5");
  EXPECT_EQ(tick_label(250, 0), "250");
  EXPECT_EQ(tick_label(0, 0), "0");
  EXPECT_EQ(tick_label(65536, 2), "2^16");
}

TEST(Svg, ScalesMapTheDomainOntoThePixels) {
  const Scale linear(0, 10, 100, 200, false);
  EXPECT_DOUBLE_EQ(linear(0), 100);
  EXPECT_DOUBLE_EQ(linear(5), 150);
  const Scale log(1, 1000, 300, 0, true);  // y grows upwards: pixels run the other way
  EXPECT_DOUBLE_EQ(log(1), 300);
  EXPECT_NEAR(log(10), 200, 1e-9);
  EXPECT_NEAR(log(1000), 0, 1e-9);
}

TEST(Svg, DomainsEndOnTicksWithRoomOnALogAxis) {
  const Domain log = domain_of(2.3e-7, 0.0024, 10, false);
  EXPECT_NEAR(log.lo, 1e-7, 1e-20);
  EXPECT_NEAR(log.hi, 1e-2, 1e-15);
  const Domain power = domain_of(1024, 1024, 2, false);  // one value, a power: not on the frame
  EXPECT_EQ(power.lo, 512);
  EXPECT_EQ(power.hi, 2048);
  const Domain seconds = domain_of(0.3, 1.37, 0, true);
  EXPECT_EQ(seconds.lo, 0);
  EXPECT_NEAR(seconds.hi, 1.4, 1e-12);
  EXPECT_NEAR(seconds.ticks.back(), 1.4, 1e-12);
}

TEST(Svg, LineChartDrawsEveryPointAndNamesWhatALogAxisCannot) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  LineChart chart{.title = "t <1>", .x = {"step", 0}, .y = {"error", 10}};
  chart.series.push_back({.name = "whole", .colour = "#000", .points = {{0, 1}, {1, 2}, {2, 4}}});
  chart.series.push_back(
      {.name = "a<b>", .colour = "#111", .points = {{0, 1}, {1, 2}, {2, 0}, {3, 1}, {4, nan}}});
  chart.rules.push_back({"limit", 8});
  const std::string svg = line_chart(chart);
  EXPECT_EQ(count(svg, "<svg"), 1u);
  // One polyline of 3 points; the second series' 0 ends its line after 2 points, and its last
  // drawable point is alone, a dot without a line.
  EXPECT_EQ(test::polyline_points(svg), (std::vector<std::size_t>{3, 2})) << svg;
  EXPECT_NE(svg.find("a&lt;b&gt;: 1 value 0, 1 value NaN (not drawn on the log axis)"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("t &lt;1&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"rule\""), 1u);
  EXPECT_NE(svg.find(">limit<"), std::string::npos);
}

TEST(Svg, StackedBarHeightsAreProportionalToTheValues) {
  BarChart chart;  // member by member: GCC 12 misreads a nested designated initializer here
  chart.title = "time";
  chart.categories = {"a", "b"};
  chart.y = {"seconds", 0};
  chart.series = {"x", "y"};
  chart.colours = {"#000", "#111"};
  chart.values = {{1, 3}, {2, 0}};
  chart.stacked = true;
  const std::string svg = bar_chart(chart);
  const auto heights = attribute_values(svg, "rect class=\"bar\"", "height");
  const auto tops = attribute_values(svg, "rect class=\"bar\"", "y");
  ASSERT_EQ(heights.size(), 4u) << svg;              // a zero is a bar of no height
  EXPECT_NEAR(heights[1] / heights[0], 2, 0.02);     // a: 1 then 2 on it
  EXPECT_NEAR(heights[2] / heights[0], 3, 0.02);     // b: 3
  EXPECT_NEAR(tops[0], tops[1] + heights[1], 0.11);  // stacked: y's bar sits on x's
}

TEST(Svg, LogBarsLeaveEmptyBucketsOutAndRefuseToStack) {
  BarChart chart;
  chart.title = "h";
  chart.categories = {"0", "1", "2"};
  chart.y = {"outputs", 10};
  chart.series = {"p"};
  chart.colours = {"#000"};
  chart.values = {{1000, 0, 10}};
  const std::string svg = bar_chart(chart);
  const auto heights = attribute_values(svg, "rect class=\"bar\"", "height");
  ASSERT_EQ(heights.size(), 2u);
  EXPECT_GT(heights[1], 0);  // the smallest count still shows
  // The axis runs from 1 to 1e4: the bar of 1000 is three decades high, the bar of 10 one.
  EXPECT_NEAR(heights[0], 3 * heights[1], 0.2);
  EXPECT_EQ(svg.find("not drawn"), std::string::npos);  // an empty bucket is not a lost value
  chart.stacked = true;
  EXPECT_THROW(bar_chart(chart), std::invalid_argument);
}

}  // namespace
}  // namespace ampbench::results::svg
