#include "python_packages.hpp"

#include <cstring>
#include <sstream>

#include "llm2hef/core/io/child_process.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::cli {

namespace {

// Prints four lines: the interpreter's path; 1 when it is externally managed
// (the EXTERNALLY-MANAGED marker in its standard library's folder, which PEP
// 668 says does not apply inside a virtual environment); 1 when ensurepip is
// there (Debian leaves it to python3-venv, and `python3 -m venv` fails
// without it); the missing modules, space-separated.
constexpr const char* kProbe =
    "import importlib.util, os, sys, sysconfig\n"
    "managed = sys.prefix == getattr(sys, 'base_prefix', sys.prefix) and os.path.isfile(\n"
    "    os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED'))\n"
    "print(sys.executable)\n"
    "print(int(managed))\n"
    "print(int(importlib.util.find_spec('ensurepip') is not None))\n"
    "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))\n";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

void require_python_modules(const std::string& python, const std::vector<std::string>& modules,
                            const std::string& purpose) {
  std::vector<std::string> argv{python, "-c", kProbe};
  argv.insert(argv.end(), modules.begin(), modules.end());
  core::ChildIo io;
  io.capture_stdout = true;
  io.stdout_limit = 64u << 10;
  const core::ChildResult r = core::run_child(argv, io);
  std::string all;
  for (const std::string& m : modules) all += (all.empty() ? "" : " ") + m;
  if (!r.started())
    throw BadInput("cannot run '" + python + "' (" + std::strerror(r.start_error) + "): " + purpose +
                   " with Python 3 and " + all +
                   " (install python3, e.g. `sudo apt-get install python3 python3-venv` on Debian); or pass "
                   "--python PATH, or set LLM2HEF_PYTHON, to an interpreter that has them");
  const std::vector<std::string> out = lines_of(r.stdout_text);
  if (!r.succeeded() || out.size() < 4)
    throw BadInput("'" + python + "' " + r.describe() + " when asked which packages it has (" + all + "): " + purpose +
                   " with Python 3; pass --python PATH, or set LLM2HEF_PYTHON, to a Python 3");
  const std::string& executable = out[0];
  const bool managed = out[1] == "1", has_ensurepip = out[2] == "1";
  const std::string& missing = out[3];
  if (missing.empty()) return;
  std::string listed;  // "a, b and c"
  {
    std::istringstream in(missing);
    std::vector<std::string> names;
    for (std::string m; in >> m;) names.push_back(m);
    for (std::size_t i = 0; i < names.size(); ++i)
      listed += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  std::string how;
  if (managed) {
    const std::string venv = "~/llm2hef-venv";
    how =
        "This Python is externally managed (PEP 668), so pip will not install into it; make a virtual "
        "environment: " +
        std::string(has_ensurepip ? "" : "`sudo apt-get install python3-venv` (Debian), then ") + "`" + python +
        " -m venv " + venv + " && " + venv + "/bin/pip install " + missing + "`, then pass --python " + venv +
        "/bin/python (or set LLM2HEF_PYTHON to it)";
  } else {
    how = "Install them with `" + executable + " -m pip install " + missing +
          "`, or pass --python PATH (or set LLM2HEF_PYTHON) to an interpreter that has them";
  }
  const std::string named = executable == python ? "'" + python + "'" : "'" + python + "' (" + executable + ")";
  throw BadInput(named + " lacks the Python package(s) " + listed + ": " + purpose + " with " + all + ". " + how);
}

}  // namespace llm2hef::cli
