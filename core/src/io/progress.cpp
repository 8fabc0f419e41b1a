#include "llm2hef/core/io/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace llm2hef::core {

// A bar is drawn only on a terminal, whatever the caller asks: carriage
// returns and escape codes in a log file or a pipe are noise.
Progress::Progress(std::string label, uint64_t total, bool enabled)
    : label_(std::move(label)), total_(std::max<uint64_t>(total, 1)), enabled_(enabled && stderr_is_terminal()) {}

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
  constexpr int kWidth = 30;
  const double frac = static_cast<double>(done_) / static_cast<double>(total_);
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  std::fprintf(stderr, "\r%-28.28s [%s] %3d%%  %.1f/%.1f MB\033[K", label_.c_str(), bar.c_str(),
               static_cast<int>(frac * 100), static_cast<double>(done_) / 1e6, static_cast<double>(total_) / 1e6);
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
