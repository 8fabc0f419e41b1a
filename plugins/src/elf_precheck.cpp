#include "llm2hef/plugins/elf_precheck.hpp"

#include <elf.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "llm2hef/plugins/loader.hpp"
#include "llm2hef/sdk/abi.hpp"

namespace llm2hef::plugins {

namespace {

using Reason = PluginLoadError::Reason;

[[noreturn]] void fail(const std::filesystem::path& path, Reason reason, std::string detail) {
  throw PluginLoadError(path, reason, std::move(detail));
}

#if defined(__x86_64__)
constexpr Elf64_Half kHostMachine = EM_X86_64;
constexpr const char* kHostMachineName = "x86-64";
#elif defined(__aarch64__)
constexpr Elf64_Half kHostMachine = EM_AARCH64;
constexpr const char* kHostMachineName = "arm64 (aarch64)";
#else
#error "llm2hef's adapter precheck knows x86-64 and arm64 hosts only"
#endif
static_assert(sizeof(void*) == 8, "adapters are 64-bit ELF objects");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the precheck reads ELF fields in host byte order");

std::string machine_name(Elf64_Half m) {
  switch (m) {
    case EM_X86_64: return "x86-64";
    case EM_AARCH64: return "arm64 (aarch64)";
    case EM_386: return "x86 (32-bit)";
    case EM_ARM: return "32-bit ARM";
    case EM_RISCV: return "RISC-V";
    case EM_PPC64: return "POWER (ppc64)";
    case EM_S390: return "s390x";
    default: return "ELF machine " + std::to_string(m);
  }
}

// Reads [offset, offset + size) of the file, or nothing when that range
// lies outside it: a section table that points past the end is the file's
// fault, and the loader will say so in its own words.
class Reader {
 public:
  explicit Reader(const std::filesystem::path& path) : in_(path, std::ios::binary) {
    if (!in_) fail(path, Reason::unreadable, std::string("cannot be read: ") + std::strerror(errno));
    in_.seekg(0, std::ios::end);
    const std::streamoff end = in_.tellg();
    size_ = end > 0 ? static_cast<uint64_t>(end) : 0;
    in_.seekg(0);
  }
  uint64_t size() const { return size_; }
  bool read(uint64_t offset, void* out, uint64_t bytes) {
    if (offset > size_ || bytes > size_ - offset) return false;
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
    return static_cast<uint64_t>(in_.gcount()) == bytes;
  }

 private:
  std::ifstream in_;
  uint64_t size_ = 0;
};

// Whether .dynsym defines `symbol`; nullopt-like "unknown" when the section
// headers cannot be followed (stripped of section headers, or damaged).
enum class EntryFound { yes, no, unknown };

EntryFound find_dynamic_symbol(Reader& file, const Elf64_Ehdr& eh, std::string_view symbol) {
  if (eh.e_shoff == 0 || eh.e_shnum == 0 || eh.e_shentsize != sizeof(Elf64_Shdr)) return EntryFound::unknown;
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (!file.read(eh.e_shoff, sections.data(), sections.size() * sizeof(Elf64_Shdr))) return EntryFound::unknown;
  for (const Elf64_Shdr& s : sections) {
    if (s.sh_type != SHT_DYNSYM) continue;
    if (s.sh_entsize != sizeof(Elf64_Sym) || s.sh_link >= sections.size()) return EntryFound::unknown;
    const Elf64_Shdr& strtab = sections[s.sh_link];
    // Both tables are bounded by the file's size (Reader::read); a real
    // adapter's are a few kilobytes.
    if (s.sh_size > file.size() || strtab.sh_size > file.size()) return EntryFound::unknown;
    std::vector<Elf64_Sym> symbols(s.sh_size / sizeof(Elf64_Sym));
    std::string names(strtab.sh_size, '\0');
    if (!file.read(s.sh_offset, symbols.data(), symbols.size() * sizeof(Elf64_Sym)) ||
        !file.read(strtab.sh_offset, names.data(), names.size()))
      return EntryFound::unknown;
    for (const Elf64_Sym& sym : symbols) {
      if (sym.st_shndx == SHN_UNDEF || sym.st_name >= names.size()) continue;
      const char* begin = names.data() + sym.st_name;
      const std::string_view name(begin, strnlen(begin, names.size() - sym.st_name));
      if (name == symbol) return EntryFound::yes;
    }
  }
  // Every dynamic symbol table was read and none defines it; or there is
  // none at all, and then the library exports nothing.
  return EntryFound::no;
}

}  // namespace

void precheck_elf(const std::filesystem::path& path) {
  Reader file(path);
  unsigned char magic[SELFMAG] = {};
  if (!file.read(0, magic, sizeof magic) || std::memcmp(magic, ELFMAG, SELFMAG) != 0)
    fail(path, Reason::not_elf, "not a shared library (no ELF header)");
  Elf64_Ehdr eh;
  if (!file.read(0, &eh, sizeof eh)) fail(path, Reason::not_elf, "not a shared library (ELF header cut short)");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64)
    fail(path, Reason::wrong_platform,
         std::string("a ") + (eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "malformed") +
             " ELF file; this llm2hef loads 64-bit " + kHostMachineName + " adapters");
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB)
    fail(path, Reason::wrong_platform,
         std::string("a big-endian ELF file; this llm2hef loads little-endian ") + kHostMachineName + " adapters");
  if (eh.e_type != ET_DYN)
    fail(path, Reason::not_elf,
         std::string("an ELF ") +
             (eh.e_type == ET_EXEC  ? "executable"
              : eh.e_type == ET_REL ? "object file (.o)"
                                    : "file") +
             ", not a shared library");
  if (eh.e_machine != kHostMachine)
    fail(path, Reason::wrong_platform,
         "built for " + machine_name(eh.e_machine) + "; this llm2hef runs on " + kHostMachineName +
             " (rebuild the adapter for this machine)");
  if (find_dynamic_symbol(file, eh, LLM2HEF_ADAPTER_ENTRY_SYMBOL) == EntryFound::no)
    fail(path, Reason::missing_entry,
         std::string("missing entry symbol '") + LLM2HEF_ADAPTER_ENTRY_SYMBOL +
             "' (not an llm2hef adapter; found without loading it)");
}

}  // namespace llm2hef::plugins
