#include "llm2hef/core/hub/hub_fetch.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "llm2hef/core/io/progress.hpp"
#include "llm2hef/core/io/staging.hpp"
#include "llm2hef/core/io/terminal_text.hpp"
#include "llm2hef/registry/download.hpp"
#include "llm2hef/registry/git_blob_id.hpp"
#include "llm2hef/registry/sha256.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::core::hub {

namespace fs = std::filesystem;

namespace {

// What the export reads besides the weights (checkpoint_dir.cpp,
// chat_template.cpp): each fetched when the repository has it.
const char* const kSideFiles[] = {"config.json", "generation_config.json", "tokenizer_config.json", "tokenizer.json",
                                  "chat_template.jinja"};
constexpr const char* kTemplateDir = "additional_chat_templates/";
constexpr const char* kSingleWeights = "model.safetensors";
constexpr const char* kWeightIndex = "model.safetensors.index.json";
// The revision metadata lists every file of the repository (about 200 bytes
// each); 64 MiB is over 300,000 files.
constexpr uint64_t kMetadataBytes = uint64_t{64} << 20;

struct RemoteFile {
  std::string name;
  uint64_t size = 0;
  std::string blob;                   // the name under blobs/: the LFS sha256, else the git blob id
  std::optional<std::string> sha256;  // LFS files: what the bytes must hash to
};

struct Listing {
  std::string commit;
  std::map<std::string, RemoteFile> files;
};

bool is_hex(const std::string& s, size_t length) {
  return s.size() == length &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string megabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// What a file's bytes must hash to, computed as they arrive: the sha256 of
// an LFS file, else the git blob id (the Hub's "blobId", which huggingface_hub
// names the cache blob after).
class ContentCheck {
 public:
  explicit ContentCheck(const RemoteFile& f) : f_(f) { reset(); }
  void reset() {
    if (f_.sha256)
      sha256_.emplace();
    else
      git_.emplace(f_.size);
  }
  void update(const char* data, size_t n) { sha256_ ? sha256_->update(data, n) : git_->update(data, n); }
  std::string finish_hex() { return sha256_ ? sha256_->finish_hex() : git_->finish_hex(); }
  const std::string& expected() const { return f_.sha256 ? *f_.sha256 : f_.blob; }
  std::string what() const { return f_.sha256 ? "sha256" : "git blob id"; }
  std::string source() const {
    return f_.sha256 ? "the Hub's LFS metadata gives" : "the Hub's metadata gives (blobId)";
  }

 private:
  const RemoteFile& f_;
  std::optional<registry::Sha256> sha256_;
  std::optional<registry::GitBlobId> git_;
};

// No answer from the Hub at all (no network, a refused connection, a
// time-out), as opposed to an answer that refuses.
struct Unreachable {
  std::string message;
};

class Session {
 public:
  Session(const HubId& id, const HubSettings& settings, const FetchOptions& options)
      : id_(id), settings_(settings), options_(options), repo_dir_(repo_cache_dir(settings.cache, id.repo)) {}

  fs::path fetch();
  fs::path from_cache_only(const std::string& why);

 private:
  std::string who() const { return id_.repo + "@" + id_.revision; }
  std::string file_text(const RemoteFile& f) const { return id_.repo + "@" + commit_.substr(0, 12) + ": " + f.name; }
  std::string model_page() const { return settings_.endpoint + "/" + id_.repo; }
  std::vector<std::string> headers() const;
  [[noreturn]] void refuse(const registry::HttpResponse& r, const std::string& what) const;
  Listing list();
  std::vector<const RemoteFile*> select(const Listing& listing);
  std::vector<const RemoteFile*> select_gguf(const Listing& listing, const std::string& file) const;
  void ensure(const RemoteFile& f);
  bool present(const RemoteFile& f, const fs::path& at) const;
  void download_blob(const RemoteFile& f, const fs::path& blob);
  void link(const fs::path& blob, const fs::path& at) const;
  void write_ref() const;
  fs::path snapshot() const { return repo_dir_ / "snapshots" / commit_; }
  std::vector<std::string> missing_in_snapshot(const fs::path& dir) const;

  const HubId& id_;
  const HubSettings& settings_;
  const FetchOptions& options_;
  fs::path repo_dir_;
  std::string commit_;
  std::unique_ptr<Progress> progress_;
  uint64_t done_ = 0;
};

std::vector<std::string> Session::headers() const {
  std::vector<std::string> h = {"Accept-Encoding: identity"};
  if (settings_.token) h.push_back("Authorization: Bearer " + *settings_.token);
  return h;
}

// The Hub's answer to a refused request, as what to do about it. The Hub says
// why in X-Error-Code (GatedRepo, RepoNotFound, RevisionNotFound,
// EntryNotFound) and X-Error-Message.
void Session::refuse(const registry::HttpResponse& r, const std::string& what) const {
  const auto header = [&](const char* name) {
    auto it = r.headers.find(name);
    return it == r.headers.end() ? std::string() : it->second;
  };
  const std::string code = header("x-error-code");
  const std::string status = "HTTP " + std::to_string(r.status) + (code.empty() ? "" : ", " + code);
  const std::string head = id_.text + ": no local folder of that name; as a Hugging Face Hub id, ";
  const std::string token_hint = settings_.token
                                     ? "the token from " + settings_.token_origin +
                                           " was sent and is not enough: check that it is "
                                           "the account that was granted access"
                                     : "set HF_TOKEN to a read token of an account that has access (" +
                                           settings_.endpoint + "/settings/tokens), or log in with `hf auth login`";
  if (code == "GatedRepo" || (r.status == 403 && code.empty()))
    throw BadInput(head + id_.repo + " is a gated model (" + status + "): accept its licence on " + model_page() +
                   " while logged in, then " + token_hint);
  if (r.status == 401 || r.status == 403)
    throw BadInput(head + "the Hub refused " + what + " (" + status + "): " + id_.repo +
                   " does not exist, or it is private or gated. Check the spelling; if you have access, " + token_hint);
  if (r.status == 404 && code == "RevisionNotFound")
    throw BadInput(head + id_.repo + " has no revision '" + id_.revision + "' (" + status + ")");
  if (r.status == 404 && code == "EntryNotFound")
    throw BadInput(head + id_.repo + "@" + id_.revision + " has no file " + what + " (" + status + ")");
  if (r.status == 404)
    throw BadInput(head + "the Hub has no repository " + id_.repo + " (" + status + "); check the spelling");
  throw BadInput(head + "the Hub answered " + status + " for " + what);
}

// GET {endpoint}/api/models/{repo}/revision/{revision}?blobs=true: the
// commit and every file with its size, git blob id and LFS sha256 (what
// huggingface_hub's model_info(files_metadata=True) asks).
Listing Session::list() {
  registry::HttpRequest request;
  request.url = settings_.endpoint + "/api/models/" + id_.repo + "/revision/" +
                registry::percent_encode(id_.revision, false) + "?blobs=true";
  request.headers = headers();
  request.headers.push_back("Accept: application/json");
  request.limits.max_bytes = kMetadataBytes;
  std::string text;
  registry::HttpResponse r;
  try {
    r = registry::http_get(request, [&](long, const char* data, size_t n) {
      text.append(data, n);
      return std::string();
    });
  } catch (const BadInput& e) {
    throw Unreachable{e.what()};
  }
  if (r.status >= 400) refuse(r, "its metadata");
  if (r.status != 200) refuse(r, "its metadata");
  const std::string origin = request.url;
  const nlohmann::json meta =
      sdk::parse_json(text, origin, sdk::JsonLimits::with_max_bytes(kMetadataBytes, "metadata"));
  const auto bad = [&](const std::string& why) -> BadInput { return BadInput(origin + ": " + why); };
  if (!meta.is_object()) throw bad("not a JSON object");
  Listing out;
  const auto sha = meta.find("sha");
  if (sha == meta.end() || !sha->is_string() || !is_hex(sha->get<std::string>(), 40))
    throw bad("'sha' is not a 40-digit commit id");
  out.commit = sha->get<std::string>();
  const auto siblings = meta.find("siblings");
  if (siblings == meta.end() || !siblings->is_array()) throw bad("'siblings' (the file list) is missing");
  for (const auto& s : *siblings) {
    if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string())
      throw bad("a 'siblings' entry has no 'rfilename'");
    RemoteFile f;
    f.name = s["rfilename"].get<std::string>();
    const std::string field = "siblings '" + printable(f.name) + "'";
    if (!is_safe_repo_path(f.name)) throw bad(field + ": not a relative path inside the repository");
    const auto lfs = s.find("lfs");
    if (lfs != s.end() && lfs->is_object()) {
      const auto oid = lfs->find("sha256");
      const auto size = lfs->find("size");
      if (oid == lfs->end() || !oid->is_string() || !is_hex(oid->get<std::string>(), 64))
        throw bad(field + ": lfs.sha256 is not 64 hex digits");
      if (size == lfs->end() || !size->is_number_unsigned()) throw bad(field + ": lfs.size is not a byte count");
      f.sha256 = oid->get<std::string>();
      f.blob = *f.sha256;
      f.size = size->get<uint64_t>();
    } else {
      const auto blob = s.find("blobId");
      const auto size = s.find("size");
      if (blob == s.end() || !blob->is_string() || !is_hex(blob->get<std::string>(), 40))
        throw bad(field + ": blobId is not a 40-digit git blob id");
      if (size == s.end() || !size->is_number_unsigned()) throw bad(field + ": size is not a byte count");
      f.blob = blob->get<std::string>();
      f.size = size->get<uint64_t>();
    }
    out.files[f.name] = f;
  }
  return out;
}

std::vector<const RemoteFile*> Session::select_gguf(const Listing& listing, const std::string& file) const {
  std::vector<std::string> ggufs;
  for (const auto& [name, f] : listing.files)
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0) ggufs.push_back(name);
  const auto it = listing.files.find(file);
  if (it == listing.files.end()) {
    std::string list;
    for (size_t i = 0; i < ggufs.size() && i < 12; ++i) list += "\n  " + printable(ggufs[i]);
    if (ggufs.size() > 12) list += "\n  ... (" + std::to_string(ggufs.size()) + " in all)";
    throw BadInput(id_.text + ": " + who() + " has no file '" + printable(file) + "'" +
                   (ggufs.empty() ? std::string(" and no .gguf file at all") : "; its .gguf files:" + list));
  }
  std::vector<const RemoteFile*> out = {&it->second};
  // A split set, NAME-00001-of-00003.gguf: every part (docs/gguf.md).
  const size_t of = file.rfind("-of-");
  if (of != std::string::npos && of >= 5 && file.size() == of + 4 + 5 + 5) {
    const std::string count = file.substr(of + 4, 5);
    const std::string prefix = file.substr(0, of - 5);
    if (std::all_of(count.begin(), count.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const int n = std::stoi(count);
      out.clear();
      for (int k = 1; k <= n; ++k) {
        char part[16];
        std::snprintf(part, sizeof part, "%05d", k);
        const std::string name = prefix + part + "-of-" + count + ".gguf";
        const auto p = listing.files.find(name);
        if (p == listing.files.end())
          throw BadInput(id_.text + ": " + who() + " lacks part " + std::to_string(k) + " of the split GGUF (" +
                         printable(name) + ")");
        out.push_back(&p->second);
      }
    }
  }
  return out;
}

std::vector<const RemoteFile*> Session::select(const Listing& listing) {
  if (!id_.file.empty()) return select_gguf(listing, id_.file);
  const auto has = [&](const std::string& name) { return listing.files.count(name) != 0; };
  if (!has("config.json")) {
    std::vector<std::string> ggufs;
    for (const auto& [name, f] : listing.files)
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0) ggufs.push_back(name);
    if (ggufs.empty())
      throw BadInput(id_.text + ": " + who() + " has no config.json: not a transformers checkpoint llm2hef can read");
    std::string list;
    for (size_t i = 0; i < ggufs.size() && i < 12; ++i) list += "\n  " + printable(ggufs[i]);
    if (ggufs.size() > 12) list += "\n  ... (" + std::to_string(ggufs.size()) + " in all)";
    throw BadInput(id_.text + ": " + who() + " holds GGUF files and no config.json: name the one to read, e.g. " +
                   id_.repo + "/" + printable(ggufs.front()) +
                   " (or --gguf-file FILE); an F16, BF16 or Q8_0 file is best (docs/gguf.md). Its .gguf files:" + list);
  }
  std::vector<const RemoteFile*> out;
  for (const char* name : kSideFiles)
    if (has(name)) out.push_back(&listing.files.at(name));
  for (const auto& [name, f] : listing.files)
    if (name.rfind(kTemplateDir, 0) == 0 && name.size() > 6 && name.compare(name.size() - 6, 6, ".jinja") == 0)
      out.push_back(&f);
  // transformers prefers the single file when both are present; so does the export.
  if (has(kSingleWeights)) {
    out.push_back(&listing.files.at(kSingleWeights));
    return out;
  }
  if (!has(kWeightIndex)) {
    if (has("pytorch_model.bin") || has("pytorch_model.bin.index.json"))
      throw BadInput(id_.text + ": " + who() +
                     " has its weights in PyTorch format (pytorch_model.bin) only; llm2hef reads safetensors");
    throw BadInput(id_.text + ": " + who() + " has neither model.safetensors nor model.safetensors.index.json");
  }
  // The index names the shards: fetched first, read with the checkpoint's own limits.
  const RemoteFile& index = listing.files.at(kWeightIndex);
  ensure(index);
  const fs::path index_path = snapshot() / kWeightIndex;
  const sdk::JsonFile json = sdk::JsonFile::load(index_path, sdk::JsonLimits::weight_index());
  const auto map = json.raw().find("weight_map");
  if (map == json.raw().end() || !map->is_object())
    throw BadInput(index_path.string() + ": weight_map is missing or not an object");
  std::set<std::string> shards;
  for (const auto& [tensor, file] : map->items()) {
    if (!file.is_string()) throw BadInput(index_path.string() + ": weight_map['" + tensor + "'] is not a file name");
    shards.insert(file.get<std::string>());
  }
  out.push_back(&index);
  for (const std::string& shard : shards) {
    const auto it = listing.files.find(shard);
    if (it == listing.files.end())
      throw BadInput(index_path.string() + ": names the shard '" + printable(shard) + "', which " + who() +
                     " does not have");
    out.push_back(&it->second);
  }
  return out;
}

// A file is in place when its snapshot entry leads to a file of the size the
// Hub gives (huggingface_hub itself trusts what is there).
bool Session::present(const RemoteFile& f, const fs::path& at) const {
  struct stat st {};
  return ::stat(at.c_str(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == f.size;
}

void Session::ensure(const RemoteFile& f) {
  const fs::path at = snapshot() / f.name;
  if (present(f, at)) return;
  const fs::path blob = repo_dir_ / "blobs" / f.blob;
  fs::create_directories(blob.parent_path());
  // One download of a blob at a time, across llm2hef and huggingface_hub:
  // the same lock file its filelock takes.
  const fs::path lock_path = settings_.cache / ".locks" / repo_dir_.filename() / (f.blob + ".lock");
  fs::create_directories(lock_path.parent_path());
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) throw BadInput(lock_path.string() + ": cannot open the lock file: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{lock};
  if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    if (!options_.quiet)
      std::cerr << "waiting for another download of " << f.name << " (" << lock_path.string() << ")\n";
    while (::flock(lock, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  if (!present(f, blob)) download_blob(f, blob);
  link(blob, at);
}

void Session::download_blob(const RemoteFile& f, const fs::path& blob) {
  const fs::path partial = blob.string() + ".incomplete";
  const int fd = ::open(partial.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw BadInput(partial.string() + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw BadInput(partial.string() + ": not a regular file");
  uint64_t have = static_cast<uint64_t>(st.st_size);
  if (have > f.size) {  // not a prefix of this file: start again
    if (::ftruncate(fd, 0) != 0) throw BadInput(partial.string() + ": cannot truncate: " + std::strerror(errno));
    have = 0;
  }
  // The hash is computed as the bytes arrive, after the resumed prefix.
  ContentCheck hash(f);
  if (have > 0) {
    std::vector<char> buf(size_t{1} << 20);
    for (uint64_t at = 0; at < have;) {
      const ssize_t n = ::pread(fd, buf.data(), std::min<uint64_t>(buf.size(), have - at), static_cast<off_t>(at));
      if (n <= 0) throw BadInput(partial.string() + ": cannot read: " + std::strerror(errno));
      hash.update(buf.data(), static_cast<size_t>(n));
      at += static_cast<uint64_t>(n);
    }
  }
  if (::lseek(fd, static_cast<off_t>(have), SEEK_SET) < 0)
    throw BadInput(partial.string() + ": cannot seek: " + std::strerror(errno));
  done_ += have;
  if (progress_) progress_->update(done_);

  if (have < f.size) {
    registry::HttpRequest request;
    request.url =
        settings_.endpoint + "/" + id_.repo + "/resolve/" + commit_ + "/" + registry::percent_encode(f.name, true);
    request.headers = headers();
    request.range_from = have;
    // The whole file may come back (a server that ignores the range): the
    // sink holds the body to the size the metadata gives.
    request.limits.max_bytes = f.size;
    request.limits.total_timeout = std::chrono::seconds(0);
    bool first = true;
    const auto sink = [&](long status, const char* data, size_t n) {
      if (first && status == 200 && have > 0) {
        // The server sent the whole file, not the range: start over.
        if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) < 0)
          return partial.string() + ": cannot truncate: " + std::strerror(errno);
        done_ -= have;
        have = 0;
        hash.reset();
      }
      first = false;
      if (have + n > f.size)
        return "more bytes than the " + std::to_string(f.size) + " the Hub's metadata gives for " + f.name;
      for (size_t put = 0; put < n;) {
        const ssize_t w = ::write(fd, data + put, n - put);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return partial.string() + ": cannot write: " + std::strerror(errno);
        put += static_cast<size_t>(w);
      }
      hash.update(data, n);
      have += n;
      done_ += n;
      if (progress_) progress_->update(done_);
      return std::string();
    };
    registry::HttpResponse r;
    try {
      r = registry::http_get(request, sink);
    } catch (const BadInput& e) {
      throw BadInput(file_text(f) + ": " + e.what() + "; what arrived (" + std::to_string(have) + " of " +
                     std::to_string(f.size) + " bytes) is kept in " + partial.string() +
                     " and the next run resumes from there");
    }
    if (r.status == 416) {  // the server's file is not the one the partial download began
      ::unlink(partial.c_str());
      throw BadInput(file_text(f) + ": the server refused to resume at byte " + std::to_string(have) +
                     " (HTTP 416); the partial file was removed: run again to download it afresh");
    }
    if (r.status >= 400 || (r.status != 200 && r.status != 206)) refuse(r, f.name);
  }
  if (have != f.size)
    throw BadInput(file_text(f) + ": the transfer ended after " + std::to_string(have) + " of " +
                   std::to_string(f.size) + " bytes; what arrived is kept in " + partial.string() +
                   " and the next run resumes from there");
  if (const std::string got = hash.finish_hex(); got != hash.expected()) {
    ::unlink(partial.c_str());
    throw BadInput(file_text(f) + ": the downloaded bytes have " + hash.what() + " " + got + ", not the " +
                   hash.expected() + " " + hash.source() + "; the file was removed (" + partial.string() +
                   "). Run again to download it afresh; if it fails again, the server or a proxy on the way alters it");
  }
  if (::fsync(fd) != 0) throw BadInput(partial.string() + ": cannot flush to disk: " + std::strerror(errno));
  if (::rename(partial.c_str(), blob.c_str()) != 0)
    throw BadInput(blob.string() + ": cannot rename the download into place: " + std::strerror(errno));
}

// snapshots/<commit>/<file> -> ../../blobs/<id>, relative as huggingface_hub
// makes it (the cache can move). Made under a staging name and renamed over
// the entry, so the entry is either absent or whole.
void Session::link(const fs::path& blob, const fs::path& at) const {
  fs::create_directories(at.parent_path());
  const fs::path target = blob.lexically_relative(at.parent_path());
  std::random_device random;
  const fs::path staging = create_staging([&] {
    for (int attempt = 0; attempt < 100; ++attempt) {
      const fs::path p = at.parent_path() / ("." + at.filename().string() + ".tmp-" + std::to_string(random()));
      if (::symlink(target.c_str(), p.c_str()) == 0) return p;
      if (errno != EEXIST) throw BadInput(p.string() + ": cannot create a link: " + std::strerror(errno));
    }
    throw BadInput(at.parent_path().string() + ": cannot find a free temporary name");
  });
  if (::rename(staging.c_str(), at.c_str()) != 0) {
    const int e = errno;
    ::unlink(staging.c_str());
    unregister_staging(staging);
    throw BadInput(at.string() + ": cannot put the link in place: " + std::strerror(e));
  }
  unregister_staging(staging);
}

// refs/<revision> holds the commit it last resolved to, which offline runs
// read (huggingface_hub writes it the same way: the bare commit id).
void Session::write_ref() const {
  if (id_.revision == commit_) return;
  const fs::path ref = repo_dir_ / "refs" / id_.revision;
  std::error_code ec;
  if (fs::is_regular_file(ref, ec)) {
    std::string old;
    if (FILE* in = std::fopen(ref.c_str(), "rb")) {
      char buf[64];
      old.assign(buf, std::fread(buf, 1, sizeof buf, in));
      std::fclose(in);
    }
    if (old == commit_) return;
  }
  fs::create_directories(ref.parent_path());
  const fs::path staging = create_staging([&] {
    std::string name = (ref.parent_path() / ("." + ref.filename().string() + ".tmp-XXXXXX")).string();
    const int fd = ::mkstemp(name.data());
    if (fd < 0) throw BadInput(name + ": cannot create: " + std::strerror(errno));
    const bool ok = ::write(fd, commit_.data(), commit_.size()) == static_cast<ssize_t>(commit_.size());
    ::close(fd);
    if (!ok) {
      ::unlink(name.c_str());
      throw BadInput(ref.string() + ": cannot write");
    }
    ::chmod(name.c_str(), 0644);
    return fs::path(name);
  });
  if (::rename(staging.c_str(), ref.c_str()) != 0) ::unlink(staging.c_str());
  unregister_staging(staging);
}

// What a snapshot folder lacks for the export: config.json and the weights
// (the other files are optional to the export as well).
std::vector<std::string> Session::missing_in_snapshot(const fs::path& dir) const {
  std::vector<std::string> missing;
  const auto here = [&](const std::string& name) {
    struct stat st {};
    return ::stat((dir / name).c_str(), &st) == 0 && S_ISREG(st.st_mode);
  };
  if (!id_.file.empty()) {
    if (!here(id_.file)) missing.push_back(id_.file);
    return missing;
  }
  if (!here("config.json")) missing.push_back("config.json");
  if (here(kSingleWeights)) return missing;
  if (!here(kWeightIndex)) {
    missing.push_back(std::string(kSingleWeights) + " (or " + kWeightIndex + " and its shards)");
    return missing;
  }
  const sdk::JsonFile json = sdk::JsonFile::load(dir / kWeightIndex, sdk::JsonLimits::weight_index());
  const auto map = json.raw().find("weight_map");
  if (map == json.raw().end() || !map->is_object()) return missing;  // the checkpoint reader names it
  std::set<std::string> shards;
  for (const auto& [tensor, file] : map->items())
    if (file.is_string()) shards.insert(file.get<std::string>());
  for (const std::string& shard : shards)
    if (!is_safe_repo_path(shard) || !here(shard)) missing.push_back(shard);
  return missing;
}

// HF_HUB_OFFLINE, or the Hub out of reach: the revision from refs/ (or a
// commit given as such) and its snapshot, if it holds what the export reads.
fs::path Session::from_cache_only(const std::string& why) {
  const fs::path ref = repo_dir_ / "refs" / id_.revision;
  std::error_code ec;
  if (is_hex(id_.revision, 40) && fs::is_directory(repo_dir_ / "snapshots" / id_.revision, ec)) {
    commit_ = id_.revision;
  } else if (fs::is_regular_file(ref, ec)) {
    if (FILE* in = std::fopen(ref.c_str(), "rb")) {
      char buf[64];
      commit_.assign(buf, std::fread(buf, 1, sizeof buf, in));
      std::fclose(in);
    }
    while (!commit_.empty() && std::isspace(static_cast<unsigned char>(commit_.back()))) commit_.pop_back();
    if (!is_hex(commit_, 40)) throw BadInput(ref.string() + ": not a 40-digit commit id");
  } else {
    throw BadInput(id_.text + ": no local folder of that name, and " + why + ": the Hugging Face cache has no " +
                   who() + " (" + ref.string() + " is missing)");
  }
  const std::vector<std::string> missing = missing_in_snapshot(snapshot());
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += "\n  " + printable(m);
    throw BadInput(id_.text + ": " + why + ", and the cached snapshot " + snapshot().string() + " lacks:" + list);
  }
  return id_.file.empty() ? snapshot() : snapshot() / id_.file;
}

fs::path Session::fetch() {
  if (settings_.offline) return from_cache_only("HF_HUB_OFFLINE is set (the cache only is used; unset it to download)");
  Listing listing;
  try {
    listing = list();
  } catch (const Unreachable& e) {
    // No answer at all: what the cache holds will do, as with
    // huggingface_hub. An answer from the Hub is final.
    const std::string& message = e.message;
    try {
      fs::path cached = from_cache_only("the Hub did not answer (" + message + ")");
      spdlog::warn("{}: the Hugging Face Hub ({}) did not answer ({}); using the cached {}", id_.text,
                   settings_.endpoint, message, cached.string());
      return cached;
    } catch (const BadInput&) {
      throw BadInput(id_.text + ": no local folder of that name, and the Hugging Face Hub (" + settings_.endpoint +
                     ") did not answer: " + message);
    }
  }
  commit_ = listing.commit;
  const std::vector<const RemoteFile*> files = select(listing);
  uint64_t to_fetch = 0;
  size_t count = 0;
  for (const RemoteFile* f : files)
    if (!present(*f, snapshot() / f->name)) {
      to_fetch += f->size;
      ++count;
    }
  if (count > 0) {
    if (!options_.quiet)
      std::cerr << "downloading " << count << " file" << (count == 1 ? "" : "s") << " (" << megabytes(to_fetch)
                << ") of " << id_.repo << "@" << commit_.substr(0, 12) << " into " << repo_dir_.string() << "\n";
    progress_ = std::make_unique<Progress>("downloading " + id_.repo, to_fetch, options_.progress);
    // The index was fetched by select(): counted as done.
    for (const RemoteFile* f : files) ensure(*f);
    progress_->finish();
  }
  write_ref();
  return id_.file.empty() ? snapshot() : snapshot() / id_.file;
}

}  // namespace

fs::path fetch_from_hub(const HubId& id, const HubSettings& settings, const FetchOptions& options) {
  return Session(id, settings, options).fetch();
}

}  // namespace llm2hef::core::hub
