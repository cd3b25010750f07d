#include "tut/problem.hpp"

#include "tut/check.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace tut {

std::string to_string(const ParamValue& v) {
  std::ostringstream s;
  if (const auto* i = std::get_if<std::int64_t>(&v)) s << *i;
  else if (const auto* d = std::get_if<double>(&v)) s << *d;
  else if (const auto* t = std::get_if<std::string>(&v)) s << *t;
  else {
    s << "[";
    const auto& a = std::get<std::vector<std::int64_t>>(v);
    for (std::size_t k = 0; k < a.size(); ++k) s << (k ? ", " : "") << a[k];
    s << "]";
  }
  return s.str();
}

Params& Params::set(std::string key, ParamValue value) {
  for (auto& [k, v] : items_)
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  items_.emplace_back(std::move(key), std::move(value));
  return *this;
}

const ParamValue* Params::find(const std::string& key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return &v;
  return nullptr;
}

void Params::missing(const std::string& key) const {
  throw std::out_of_range("case parameter '" + key + "' is missing or has another type");
}

std::int64_t Case::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string Case::shape_text() const {
  std::string out;
  for (std::size_t k = 0; k < shape.size(); ++k) out += (k ? "x" : "") + std::to_string(shape[k]);
  return out;
}

Case flat_case(std::int64_t n) { return Case{"n=" + std::to_string(n), {n}, {}}; }

namespace {
std::int64_t parse_dim(const std::string& text, const std::string& whole) {
  auto fail = [&](const std::string& why) -> std::int64_t {
    throw std::invalid_argument("shape '" + whole + "': " + why);
  };
  if (text.empty()) return fail("an empty dimension");
  const auto caret = text.find('^');
  auto digits = [&](const std::string& t) -> std::int64_t {
    if (t.empty()) return fail("'" + text + "' is not a number");
    for (char c : t)
      if (!std::isdigit(static_cast<unsigned char>(c))) return fail("'" + text + "' is not a number");
    if (t.size() > 18) return fail("'" + text + "' is too large");
    return std::stoll(t);
  };
  if (caret == std::string::npos) return digits(text);
  const std::int64_t base = digits(text.substr(0, caret)), exp = digits(text.substr(caret + 1));
  std::int64_t v = 1;
  for (std::int64_t k = 0; k < exp; ++k) {
    if (base != 0 && v > std::numeric_limits<std::int64_t>::max() / base) return fail("'" + text + "' is too large");
    v *= base;
  }
  return v;
}
}  // namespace

std::vector<std::int64_t> parse_shape(const std::string& text) {
  std::vector<std::int64_t> dims;
  std::size_t begin = 0;
  while (true) {
    const auto x = text.find('x', begin);
    dims.push_back(parse_dim(text.substr(begin, x == std::string::npos ? std::string::npos : x - begin), text));
    if (x == std::string::npos) break;
    begin = x + 1;
  }
  return dims;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::own: return "own";
    case Kind::peer: return "peer";
    default: return "exercise";
  }
}

void Scratch::check_view(std::size_t offset, std::size_t bytes, std::size_t align) const {
  if (offset > buf_.size() || bytes > buf_.size() - offset)
    throw std::out_of_range("scratch view of " + std::to_string(bytes) + " bytes at " + std::to_string(offset) +
                            " exceeds the " + std::to_string(buf_.size()) + " bytes the version asked for");
  if (offset % align != 0)
    throw std::invalid_argument("scratch view at byte " + std::to_string(offset) + " is not aligned to " +
                                std::to_string(align));
}

CheckResult checked_run(const Trial& t, cudaStream_t stream) {
  t.poison(stream);
  t.before(stream);
  t.launch(stream);
  TUT_CUDA(cudaStreamSynchronize(stream));
  return t.check();
}

std::string problems_json(const std::vector<ProblemEntry>& problems) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : problems) {
    nlohmann::json versions = nlohmann::json::array(), suite = nlohmann::json::array();
    for (const auto& v : p.versions)
      versions.push_back({{"name", v.name}, {"kind", kind_name(v.kind)}, {"summary", v.summary}, {"library", v.library}});
    for (const auto& c : p.suite) suite.push_back(c.name);
    out.push_back({{"problem", p.name}, {"dtype", p.dtype}, {"description", p.description},
                   {"default_case", p.default_case.name}, {"suite", suite}, {"versions", versions}});
  }
  return out.dump(2);
}

}  // namespace tut
