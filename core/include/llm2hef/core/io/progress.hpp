// A one-line progress bar on stderr, drawn only when stderr is a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace llm2hef::core {

// The bar's text for `done` of `total` bytes after `seconds`: label, bar,
// percent, megabytes, the rate and the time left at that rate (once a rate
// can be told).
std::string progress_line(const std::string& label, uint64_t done, uint64_t total, double seconds);

class Progress {
 public:
  // `enabled` false, or stderr not a terminal: nothing is ever drawn.
  Progress(std::string label, uint64_t total, bool enabled);
  ~Progress();
  void update(uint64_t done);
  void set_total(uint64_t total);
  void set_label(std::string label);
  void finish();

  static bool stderr_is_terminal();
  // -q: no bar is drawn by any Progress made afterwards.
  static void disable_all();

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  void draw(bool force);
  std::string label_;
  uint64_t total_, done_ = 0;
  bool enabled_, finished_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace llm2hef::core
