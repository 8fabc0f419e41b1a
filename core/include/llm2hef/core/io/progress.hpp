// A one-line progress bar on stderr, drawn only when stderr is a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace llm2hef::core {

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

 private:
  void draw(bool force);
  std::string label_;
  uint64_t total_, done_ = 0;
  bool enabled_, finished_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace llm2hef::core
