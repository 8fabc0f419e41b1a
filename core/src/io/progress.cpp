#include "llm2hef/core/io/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

namespace llm2hef::core {

namespace {

// "42s", "3m05s", "1h02m".
std::string duration_text(double seconds) {
  const auto s = static_cast<uint64_t>(seconds + 0.5);
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llus", static_cast<unsigned long long>(s));
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%llum%02llus", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lluh%02llum", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s / 60 % 60));
  return buf;
}

}  // namespace

std::string progress_line(const std::string& label, uint64_t done, uint64_t total, double seconds) {
  constexpr int kWidth = 30;
  total = std::max<uint64_t>(total, 1);
  done = std::min(done, total);
  const double frac = static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-28.28s [%s] %3d%%  %.1f/%.1f MB", label.c_str(), bar.c_str(),
                static_cast<int>(frac * 100), static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6);
  std::string line = buf;
  // A rate from less than a tenth of a second or no bytes says nothing yet.
  if (seconds >= 0.1 && done > 0) {
    const double rate = static_cast<double>(done) / seconds;
    std::snprintf(buf, sizeof buf, "  %.1f MB/s", rate / 1e6);
    line += buf;
    line += done < total ? ", " + duration_text(static_cast<double>(total - done) / rate) + " left"
                         : ", " + duration_text(seconds);
  }
  return line;
}

namespace {
std::atomic<bool> g_disabled{false};
}  // namespace

void Progress::disable_all() { g_disabled = true; }

// A bar is drawn only on a terminal, whatever the caller asks: carriage
// returns and escape codes in a log file or a pipe are noise.
Progress::Progress(std::string label, uint64_t total, bool enabled)
    : label_(std::move(label)),
      total_(std::max<uint64_t>(total, 1)),
      enabled_(enabled && !g_disabled && stderr_is_terminal()) {}

Progress::~Progress() { finish(); }

bool Progress::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

void Progress::set_label(std::string label) {
  label_ = std::move(label);
  draw(true);
}

void Progress::set_total(uint64_t total) { total_ = std::max<uint64_t>(total, 1); }

void Progress::update(uint64_t done) {
  done_ = std::min(done, total_);
  draw(false);
}

void Progress::draw(bool force) {
  if (!enabled_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "\r%s\033[K", progress_line(label_, done_, total_, seconds).c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  done_ = total_;
  draw(true);
  std::fprintf(stderr, "\n");
  finished_ = true;
}

}  // namespace llm2hef::core
