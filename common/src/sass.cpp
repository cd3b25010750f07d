#include "tut/sass.hpp"

#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace tut {

namespace {
std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

bool executable(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

namespace {
std::vector<std::filesystem::path> search_dirs() {
  std::vector<std::filesystem::path> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string d; std::getline(ss, d, ':');)
      if (!d.empty()) dirs.emplace_back(d);
  }
  if (const char* cuda = std::getenv("CUDA_PATH")) dirs.emplace_back(std::filesystem::path(cuda) / "bin");
  dirs.emplace_back("/usr/local/cuda/bin");
  return dirs;
}

// cuobjdump -sass runs nvdisasm, which it looks for on PATH: accept a cuobjdump only where an
// nvdisasm sits beside it or on the search path.
bool has_nvdisasm(const std::filesystem::path& cuobjdump) {
  if (executable(cuobjdump.parent_path() / "nvdisasm")) return true;
  for (const auto& d : search_dirs())
    if (executable(d / "nvdisasm")) return true;
  return false;
}
}  // namespace

std::optional<std::string> find_cuobjdump() {
  std::vector<std::filesystem::path> candidates;
  if (const char* env = std::getenv("CUOBJDUMP"); env && *env) candidates.emplace_back(env);
  for (const auto& d : search_dirs()) candidates.push_back(d / "cuobjdump");
  for (const auto& c : candidates)
    if (executable(c) && has_nvdisasm(c)) return c.string();
  return std::nullopt;
}

std::string sass_subject() {
  const char* env = std::getenv("TUT_SASS_BINARY");
  if (!env || !*env) throw std::runtime_error("TUT_SASS_BINARY is not set: run this test through `meson test`");
  return env;
}

std::vector<SassKernel> parse_sass(const std::string& text) {
  // Kernels start with "Function : <mangled>"; instructions look like
  //   /*0090*/                   LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;  /* 0x... */
  // possibly with a predicate "@P0" or "@!P0" before the opcode.
  static const std::regex function_re(R"(^\s*Function\s*:\s*(\S+))");
  static const std::regex instr_re(R"(^\s*/\*([0-9a-fA-F]+)\*/\s+(.*?)\s*;)");
  std::vector<SassKernel> out;
  std::istringstream in(text);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, function_re)) {
      out.push_back({m[1].str(), demangle(m[1].str()), {}});
    } else if (!out.empty() && std::regex_search(line, m, instr_re)) {
      const long address = std::stol(m[1].str(), nullptr, 16);
      std::string body = m[2].str();
      std::istringstream words(body);
      std::string op;
      words >> op;
      if (!op.empty() && op[0] == '@') words >> op;  // skip the predicate
      if (!op.empty() && op[0] != '{' && op[0] != '}') out.back().code.push_back({address, op, body});
    }
  }
  return out;
}

std::vector<SassKernel> disassemble(const std::string& binary) {
  const auto tool = find_cuobjdump();
  if (!tool) throw std::runtime_error("cuobjdump and nvdisasm not found (set CUOBJDUMP or put them on PATH)");
  const std::string dir = std::filesystem::path(*tool).parent_path().string();
  const std::string cmd =
      "PATH=" + shell_quote(dir) + ":\"$PATH\" " + shell_quote(*tool) + " -sass " + shell_quote(binary) + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) throw std::runtime_error("cannot run " + cmd);
  std::string text;
  std::array<char, 1 << 16> buf;
  for (std::size_t got; (got = std::fread(buf.data(), 1, buf.size(), pipe.get())) > 0;) text.append(buf.data(), got);
  const int status = pclose(pipe.release());
  if (status != 0) throw std::runtime_error("'" + cmd + "' failed: " + text.substr(0, 500));
  auto kernels = parse_sass(text);
  if (kernels.empty()) throw std::runtime_error("no kernels in the SASS of " + binary);
  return kernels;
}

const SassKernel& find_kernel(const std::vector<SassKernel>& kernels, std::string_view fragment) {
  const SassKernel* found = nullptr;
  std::string all;
  int hits = 0;
  for (const auto& k : kernels) {
    all += "\n  " + k.name;
    if (k.name.find(fragment) != std::string::npos) {
      found = &k;
      ++hits;
    }
  }
  if (hits != 1)
    throw std::runtime_error(std::to_string(hits) + " kernels match '" + std::string(fragment) +
                             "' (exactly one must); kernels:" + all);
  return *found;
}

std::vector<SassInstruction> loop_around(const SassKernel& k, std::string_view opcode_prefix) {
  static const std::regex target_re(R"(\bBRA\b.*?0x([0-9a-fA-F]+))");
  std::size_t at = 0;
  while (at < k.code.size() && k.code[at].opcode.compare(0, opcode_prefix.size(), opcode_prefix) != 0) ++at;
  if (at == k.code.size()) return {};
  for (std::size_t j = at + 1; j < k.code.size(); ++j) {
    std::smatch m;
    if (k.code[j].opcode.compare(0, 3, "BRA") != 0 || !std::regex_search(k.code[j].text, m, target_re)) continue;
    const long target = std::stol(m[1].str(), nullptr, 16);
    if (target > k.code[at].address) continue;  // a forward branch: not this loop's back edge
    std::vector<SassInstruction> body;
    for (const auto& i : k.code)
      if (i.address >= target && i.address <= k.code[j].address) body.push_back(i);
    return body;
  }
  return {};
}

bool same_code(const SassKernel& a, const SassKernel& b) {
  if (a.code.size() != b.code.size()) return false;
  for (std::size_t i = 0; i < a.code.size(); ++i)
    if (a.code[i].text != b.code[i].text) return false;
  return true;
}

int count_opcode(const SassKernel& k, std::string_view prefix) {
  int n = 0;
  for (const auto& i : k.code)
    if (i.opcode.compare(0, prefix.size(), prefix) == 0) ++n;
  return n;
}

int count_active_mask_reads(const SassKernel& k) {
  int n = 0;
  for (const auto& i : k.code) {
    if (i.opcode.rfind("VOTE.ANY", 0) != 0) continue;
    // "VOTE.ANY R0, PT, PT ;": the vote's predicate is the constant true.
    std::string t = i.text;
    t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
    if (t.find(",PT,PT") != std::string::npos) ++n;
  }
  return n;
}

int access_bits(std::string_view opcode) {
  int bits = 32;
  std::size_t pos = 0;
  while ((pos = opcode.find('.', pos)) != std::string_view::npos) {
    const std::size_t end = opcode.find('.', pos + 1);
    const std::string_view mod = opcode.substr(pos + 1, end == std::string_view::npos ? end : end - pos - 1);
    if (mod == "128") bits = 128;
    else if (mod == "64") bits = 64;
    else if (mod == "U16" || mod == "S16") bits = 16;
    else if (mod == "U8" || mod == "S8") bits = 8;
    pos = pos + 1;
  }
  return bits;
}

namespace {
bool is_op(std::string_view op, std::string_view kind) {
  return op.compare(0, kind.size(), kind) == 0 && (op.size() == kind.size() || op[kind.size()] == '.');
}
}  // namespace

std::vector<std::vector<SassInstruction>> loops(const SassKernel& k) {
  static const std::regex target_re(R"(\bBRA\b.*?0x([0-9a-fA-F]+))");
  std::vector<std::vector<SassInstruction>> out;
  for (const auto& b : k.code) {
    std::smatch m;
    if (b.opcode.compare(0, 3, "BRA") != 0 || !std::regex_search(b.text, m, target_re)) continue;
    const long target = std::stol(m[1].str(), nullptr, 16);
    if (target >= b.address) continue;  // a forward branch (or a self-loop at the end): no body
    std::vector<SassInstruction> body;
    for (const auto& i : k.code)
      if (i.address >= target && i.address <= b.address) body.push_back(i);
    out.push_back(std::move(body));
  }
  return out;
}

std::vector<SassInstruction> main_loop(const SassKernel& k, std::string_view opcode_prefix) {
  std::vector<SassInstruction> best;
  int best_count = 0;
  for (auto& body : loops(k)) {
    int count = 0;
    for (const auto& i : body) count += i.opcode.compare(0, opcode_prefix.size(), opcode_prefix) == 0;
    if (count > best_count) {
      best_count = count;
      best = std::move(body);
    }
  }
  return best;
}

namespace {
using Code = std::vector<SassInstruction>;

int bytes_before_store(Code::const_iterator first, Code::const_iterator last) {
  int bytes = 0;
  for (; first != last && !is_op(first->opcode, "STG"); ++first)
    if (is_op(first->opcode, "LDG")) bytes += access_bits(first->opcode) / 8;
  return bytes;
}
}  // namespace

int load_bytes_before_first_store(const SassKernel& k) {
  int best = bytes_before_store(k.code.begin(), k.code.end());  // from the kernel's entry
  for (const auto& body : loops(k)) best = std::max(best, bytes_before_store(body.begin(), body.end()));
  // From the start of every other path: the code after an unpredicated EXIT or BRA is reached only
  // by a jump, as a kernel's main path is when a tail path comes first in the listing.
  for (auto op = k.code.begin(); op != k.code.end(); ++op) {
    const bool predicated = op->text.compare(0, 1, "@") == 0;
    const bool jump = op->opcode == "BRA" || op->opcode == "BRA.U";  // not BRA.DIV, which may fall through
    if (!predicated && (op->opcode == "EXIT" || jump)) best = std::max(best, bytes_before_store(op + 1, k.code.end()));
  }
  return best;
}

int count_memory_ops(const SassKernel& k, std::string_view kind, int bits) {
  int n = 0;
  for (const auto& i : k.code) {
    // The opcode itself must be `kind` (LDG must not match LDGSTS or LDGDEPBAR).
    if (is_op(i.opcode, kind) && access_bits(i.opcode) == bits) ++n;
  }
  return n;
}

}  // namespace tut
