// Inline SVG charts for the HTML report: scales with readable ticks (linear, or logarithmic in base
// 10 or 2), line charts and grouped or stacked bar charts, each with a title, labelled axes and a
// legend. Values a logarithmic axis cannot show (zeros, negatives, non-finite values) are not
// drawn but counted in a note under the chart, so that a missing point is never silent.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ampbench::results::svg {

// Text and attribute content for HTML, SVG and XML: & < > " ' escaped.
std::string escape(std::string_view text);

// The axis range for values in [lo, hi]: on a logarithmic axis whole powers of the base with
// room below and above a value that is itself a power, on a linear one whole tick steps (from 0
// when `from_zero`), so that both ends carry ticks; its ticks.
struct Domain {
  double lo, hi;
  std::vector<double> ticks;
};
Domain domain_of(double lo, double hi, int log_base, bool from_zero);

// About `count` ticks over [lo, hi] at a step of 1, 2 or 5 times a power of ten, all inside it.
std::vector<double> linear_ticks(double lo, double hi, int count);
// The powers of `base` (10 or 2) inside [lo, hi], 0 < lo <= hi; at most about 8 of them, by
// skipping every other one (or more) when the range is wide.
std::vector<double> log_ticks(double lo, double hi, int base);
// A tick's label: 0.001, 250, 1e+06; for base 2 the power, 2^16.
std::string tick_label(double value, int base);

// Maps [lo, hi] onto the pixels [pixel_lo, pixel_hi], logarithmically when `log`.
class Scale {
 public:
  Scale(double lo, double hi, double pixel_lo, double pixel_hi, bool log);
  double operator()(double value) const;

 private:
  double lo_, hi_, pixel_lo_, pixel_hi_;
  bool log_;
};

// A stable colour for the i-th series of the page (a policy keeps its colour from chart to chart).
std::string colour(std::size_t index);
inline constexpr const char* kReferenceColour = "#222222";
// Pale colours for the parts of a stacked bar (ops, phases), so that none reads as a policy.
std::string segment_colour(std::size_t index);

struct Axis {
  std::string label{};
  int log_base = 0;  // 0: linear; 10 or 2: logarithmic
};

struct Series {
  std::string name{};
  std::string colour{};
  std::vector<std::pair<double, double>> points{};  // (x, y)
  bool line = true;      // a polyline through the points; false: markers only
  bool crosses = false;  // markers as crosses (events such as skipped steps) instead of dots
  double width = 2;      // of the line, in pixels: wider for a reference the others lie on
};

// A horizontal line across the plot at y, dashed, in the legend: a bound, a limit.
struct Rule {
  std::string name{};
  double y = 0;
};

struct LineChart {
  std::string title{};
  Axis x{}, y{};
  std::vector<Series> series{};
  std::vector<Rule> rules{};
  std::vector<std::string> notes{};  // said under the chart, after what was not drawn
};

// One <svg>: a polyline per series (broken where a point cannot be drawn), markers, axes with
// ticks, the legend, and a note naming what was not drawn.
std::string line_chart(const LineChart& chart);

struct BarChart {
  std::string title{};
  std::string x_label{};
  std::vector<std::string> categories{};      // along x
  Axis y{};                                   // linear, or log_base 10
  std::vector<std::string> series{};          // names, in the legend
  std::vector<std::string> colours{};         // one per series
  std::vector<std::vector<double>> values{};  // values[series][category]
  bool stacked = false;                       // stacked (linear y only) or side by side
};

// One <svg>: a bar per series and category, side by side or stacked, axes, legend and note.
std::string bar_chart(const BarChart& chart);

}  // namespace ampbench::results::svg
