// Programs llm2hef runs (python3 for calibrate.py, the tokenizer for
// `inputs --text`). A child must behave as part of the command the user
// started: it gets the default signal dispositions and an empty signal mask
// (llm2hef blocks SIGINT/SIGTERM/SIGHUP in its own threads for the staging
// watcher, and a mask is inherited), the watcher forwards those signals to it
// and waits for it before cleaning up and dying, so Ctrl-C never leaves a
// child running that writes outputs afterwards (issue 41, item 15); and its
// end is reported in words, a signal by name.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace llm2hef::core {

struct ChildIo {
  // Written to the child's standard input (then closed) when set; otherwise
  // the child inherits llm2hef's.
  const std::string* stdin_text = nullptr;
  // Capture standard output (at most stdout_limit bytes are kept); otherwise
  // the child inherits llm2hef's.
  bool capture_stdout = false;
  std::size_t stdout_limit = 16u << 20;
  // NAME=VALUE entries added to the child's environment where the user has
  // not set NAME already.
  std::vector<std::string> env_defaults;
};

struct ChildResult {
  int start_error = 0;  // errno when the program could not be started (then nothing else is set)
  int wait_status = 0;  // as waitpid() returns it
  std::string stdout_text;

  bool started() const { return start_error == 0; }
  bool succeeded() const;
  // "exited with status 3", "was killed by SIGKILL (...)".
  std::string describe() const;
};

// Runs argv (argv[0] searched in PATH) to completion. Never throws for the
// child's own failure; throws InternalError only for a failing system call.
ChildResult run_child(const std::vector<std::string>& argv, const ChildIo& io = {});

// "exited with status N" or "was killed by SIGNAME", with a hint for SIGKILL
// (the kernel's out-of-memory killer is its usual sender).
std::string describe_wait_status(int wait_status);

}  // namespace llm2hef::core
