// Running a piece of work in a throw-away child process, with a deadline
// and a bounded report: what both the host's isolated load
// (plugins/probe.hpp) and the registry's claims probe
// (registry/claims_probe.hpp) need, so that a library that ends its process
// while loading, hangs, or floods its pipe cannot take llm2hef with it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace llm2hef::plugins {

struct ChildOutcome {
  bool started = false;         // false: pipe() or fork() failed, see `failure`
  std::string failure;          // why the child could not be started
  bool timed_out = false;       // no end of report within the timeout: the child was killed
  bool too_long = false;        // the report passed max_report bytes: the child was killed
  bool exited_cleanly = false;  // the child got to _exit(0)
  std::string report;           // what `work` returned; empty unless it arrived whole
  // How the child ended, when it was not killed for time or size: "the
  // library killed its process while loading (signal 6, Aborted)", "... (exit
  // status 0)" (meaningful when the report is missing: the work was cut short).
  std::string how_it_ended;
};

// Forks; the child restores the default signal dispositions and mask (the
// host leaves SIGINT/SIGTERM/SIGHUP to a sigwait thread the child does not
// have), sends its stdout/stderr to /dev/null, runs `work` (an exception
// becomes an empty report), writes the returned text to a pipe, framed by
// its length, and _exits without running atexit handlers. The parent reads
// until the report is complete, the pipe closes, `timeout` passes or the
// report is longer than `max_report` bytes (killing the child in the last
// two cases; a process the work forked that keeps the pipe open cannot
// stretch the wait), then reaps the child. Never throws.
ChildOutcome run_in_child(const std::function<std::string()>& work, std::chrono::milliseconds timeout,
                          std::size_t max_report);

}  // namespace llm2hef::plugins
