#include "tut/problem.hpp"

#include "json.hpp"
#include "tut/check.hpp"
#include "tut/random.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace tut {

// ---- Cases ---------------------------------------------------------------------------------------

std::string to_string(const ParamValue& v) {
  std::ostringstream s;
  if (const auto* i = std::get_if<std::int64_t>(&v)) s << *i;
  else if (const auto* d = std::get_if<double>(&v)) s << *d;
  else if (const auto* t = std::get_if<std::string>(&v)) s << *t;
  else {
    const auto& a = std::get<std::vector<std::int64_t>>(v);
    for (std::size_t k = 0; k < a.size(); ++k) s << (k ? "x" : "") << a[k];
  }
  return s.str();
}

namespace {
bool whole_text(const std::string& t) {
  std::size_t k = (!t.empty() && t[0] == '-') ? 1 : 0;
  if (k == t.size()) return false;
  for (; k < t.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(t[k]))) return false;
  return t.size() <= 19;
}
std::string joined(const std::vector<std::string>& words, const char* sep = ", ") {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : sep) + w;
  return out;
}
}  // namespace

ParamValue parse_param(const ParamSpec& spec, const std::string& text) {
  const auto bad = [&](const std::string& want) -> std::invalid_argument {
    return std::invalid_argument("parameter '" + spec.key + "': '" + text + "' is not " + want);
  };
  if (std::holds_alternative<std::int64_t>(spec.default_value)) {
    if (!whole_text(text)) throw bad("a whole number");
    return std::stoll(text);
  }
  if (std::holds_alternative<double>(spec.default_value)) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size()) throw bad("a number");
    return v;
  }
  if (std::holds_alternative<std::string>(spec.default_value)) {
    if (!spec.choices.empty() && std::find(spec.choices.begin(), spec.choices.end(), text) == spec.choices.end())
      throw bad("one of " + joined(spec.choices));
    if (text.empty()) throw bad("a word");
    return text;
  }
  // A list: 3x3x3 or 3,3,3 (or one number, which a problem may repeat per axis).
  std::vector<std::int64_t> out;
  std::string part;
  for (std::size_t k = 0; k <= text.size(); ++k) {
    if (k == text.size() || text[k] == 'x' || text[k] == ',') {
      if (!whole_text(part)) throw bad("a list of whole numbers such as 3x3x3 or 3,3,3");
      out.push_back(std::stoll(part));
      part.clear();
    } else {
      part += text[k];
    }
  }
  return out;
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

std::string case_name(const std::vector<std::int64_t>& shape, const Params& params) {
  Case c{"", shape, {}};
  std::string out = shape.size() == 1 ? "n=" + c.shape_text() : c.shape_text();
  for (const auto& [k, v] : params.items()) out += " " + k + "=" + to_string(v);
  return out;
}

Case flat_case(std::int64_t n) { return Case{"n=" + std::to_string(n), {n}, {}}; }

namespace {
std::int64_t parse_dim(const std::string& text, const std::string& whole) {
  auto fail = [&](const std::string& why) -> std::int64_t {
    throw std::invalid_argument("shape '" + whole + "': " + why);
  };
  if (text.empty()) return fail("an empty dimension");
  if (text[0] == '-') return fail("'" + text + "' is negative; a dimension counts elements");
  const auto caret = text.find('^');
  auto digits = [&](const std::string& t) -> std::int64_t {
    if (t.empty()) return fail("'" + text + "' is not a whole number (write digits, or 2^k)");
    for (char c : t)
      if (!std::isdigit(static_cast<unsigned char>(c))) return fail("'" + text + "' is not a whole number (write digits, or 2^k)");
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
  if (text.rfind("0x", 0) == 0 || text.rfind("0X", 0) == 0)
    throw std::invalid_argument("shape '" + text + "': hexadecimal is not read; write the number in decimal or as 2^k");
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

// ---- Operands and instances -----------------------------------------------------------------------

const char* role_name(Role r) {
  switch (r) {
    case Role::input: return "input";
    case Role::saved: return "saved";
    case Role::output: return "output";
    default: return "state";
  }
}

int InstanceOptions::offset(const std::string& name) const {
  const auto it = offsets.find(name);
  return it == offsets.end() ? 0 : it->second;
}

std::uint64_t InstanceOptions::seed_of(const std::string& name) const {
  std::uint64_t h = splitmix64(seed);
  for (char ch : name) h = splitmix64(h ^ static_cast<unsigned char>(ch));
  return h;
}

Operand& Instance::add(std::unique_ptr<Operand> op) {
  for (const auto& o : ops_)
    if (o->name() == op->name()) throw std::logic_error("operand '" + op->name() + "' is declared twice");
  ops_.push_back(std::move(op));
  return *ops_.back();
}

Operand& Instance::operand(const std::string& name) const {
  std::vector<std::string> all;
  for (const auto& o : ops_) {
    if (o->name() == name) return *o;
    all.push_back(o->name());
  }
  throw std::out_of_range("no operand '" + name + "' (declared: " + joined(all) + ")");
}

std::vector<std::string> Instance::names(Role role) const {
  std::vector<std::string> out;
  for (const auto& o : ops_)
    if (o->role() == role) out.push_back(o->name());
  return out;
}

void Instance::poison(cudaStream_t s) {
  for (const auto& o : ops_)
    if (o->checked()) o->poison(s);
}

void Instance::reset(cudaStream_t s) {
  for (const auto& o : ops_)
    if (o->role() == Role::state) o->refill(s);
  restore(s);
}

CheckResult Instance::check(const std::vector<std::string>& written) {
  TUT_CUDA(cudaDeviceSynchronize());
  std::vector<Operand*> outs;
  if (written.empty()) {
    for (const auto& o : ops_)
      if (o->checked()) outs.push_back(o.get());
  } else {
    for (const auto& w : written) outs.push_back(&operand(w));
  }
  for (const auto& o : ops_)
    if (o->role() == Role::saved) o->download();
  for (Operand* o : outs) o->download();
  prepare_reference();
  CheckResult r;
  for (Operand* o : outs) r.add(o->name(), o->verify());
  return r;
}

std::size_t Instance::working_set() const {
  std::size_t total = 0;
  for (const auto& o : ops_) total += o->bytes();
  return total;
}

void Workspace::resize(std::size_t bytes) {
  buf_ = DeviceBuffer<unsigned char>(bytes);
  buf_.fill_bytes(0);
}

void Workspace::check_view(std::size_t offset, std::size_t bytes, std::size_t align) const {
  if (offset > buf_.size() || bytes > buf_.size() - offset)
    throw std::out_of_range("workspace view of " + std::to_string(bytes) + " bytes at " + std::to_string(offset) +
                            " exceeds the " + std::to_string(buf_.size()) + " bytes the version asked for");
  if (offset % align != 0)
    throw std::invalid_argument("workspace view at byte " + std::to_string(offset) + " is not aligned to " +
                                std::to_string(align));
}

CheckResult checked_run(const Trial& t, cudaStream_t stream) {
  t.poison(stream);
  t.before(stream);
  t.launch(stream);
  TUT_CUDA(cudaStreamSynchronize(stream));
  return t.check();
}

// ---- Problems, cases by text, chains -------------------------------------------------------------

std::size_t ProblemEntry::version_index(const std::string& v) const {
  std::vector<std::string> all;
  for (std::size_t k = 0; k < versions.size(); ++k) {
    if (versions[k].name == v) return k;
    all.push_back(versions[k].name);
  }
  throw std::invalid_argument("no version '" + v + "' of " + name + " (it has: " + joined(all) + ")");
}

Case make_case(const std::string& problem, const std::vector<ParamSpec>& specs,
               const std::function<Case(const std::vector<std::int64_t>&, const Params&)>& case_for,
               const std::vector<std::int64_t>& shape, const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> keys;
  for (const auto& s : specs) keys.push_back(s.key);
  Params given;
  for (const auto& [k, text] : overrides) {
    const auto it = std::find_if(specs.begin(), specs.end(), [&](const ParamSpec& s) { return s.key == k; });
    if (it == specs.end())
      throw std::invalid_argument(problem + " has no parameter '" + k + "'" +
                                  (keys.empty() ? " (it takes none)" : " (it takes: " + joined(keys) + ")"));
    given.set(k, parse_param(*it, text));
  }
  Params full;
  for (const auto& s : specs) {
    const ParamValue* v = given.find(s.key);
    full.set(s.key, v ? *v : s.default_value);
  }
  try {
    return case_for(shape, full);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(problem + ": " + e.what());
  }
}

Case make_case(const ProblemEntry& p, const std::vector<std::int64_t>& shape,
               const std::vector<std::pair<std::string, std::string>>& overrides) {
  return make_case(p.name, p.params, p.case_for, shape, overrides);
}

Case with_params(const ProblemEntry& p, const Case& c, const std::vector<std::pair<std::string, std::string>>& overrides) {
  if (overrides.empty()) return c;
  std::vector<std::pair<std::string, std::string>> all;
  for (const auto& [k, v] : c.params.items())
    if (std::none_of(overrides.begin(), overrides.end(), [&](const auto& o) { return o.first == k; }))
      all.emplace_back(k, to_string(v));
  all.insert(all.end(), overrides.begin(), overrides.end());
  return make_case(p, c.shape, all);
}

Case parse_case_text(const ProblemEntry& p, const std::string& text) {
  if (text.empty()) return p.default_case;
  if (text == p.default_case.name) return p.default_case;
  for (const auto& c : p.suite)
    if (c.name == text) return c;
  std::istringstream in(text);
  std::string shape_word, word;
  in >> shape_word;
  if (shape_word.rfind("n=", 0) == 0) shape_word = shape_word.substr(2);
  std::vector<std::pair<std::string, std::string>> overrides;
  while (in >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("case '" + text + "': '" + word + "' is not key=value");
    overrides.emplace_back(word.substr(0, eq), word.substr(eq + 1));
  }
  return make_case(p, parse_shape(shape_word), overrides);
}

namespace {
bool writes(const VersionInfo& v, const std::string& output) {
  return v.writes.empty() || std::find(v.writes.begin(), v.writes.end(), output) != v.writes.end();
}
}  // namespace

int fill_saved_from(const Chain& chain, const ProblemEntry& fwd, std::size_t fv, const Case& c,
                    const InstanceOptions& opt, Instance& into) {
  const VersionInfo& v = fwd.versions.at(fv);
  InstanceOptions fo;  // the forward's own operands at their aligned place; the same tensors
  fo.seed = opt.seed;
  fo.specials = opt.specials;
  const auto session = fwd.open(c, fo);
  const CheckResult r = checked_run(session->trial(fv));
  if (!r.ok())
    throw std::runtime_error(fwd.name + " " + v.name + " failed its check on " + c.name +
                             ", so its outputs cannot feed the backward: " + r.summary());
  int filled = 0;
  for (const auto& [saved, output] : chain.links) {
    if (!writes(v, output)) continue;
    const Operand& src = session->instance().operand(output);
    Operand& dst = into.operand(saved);
    if (src.bytes() != dst.bytes() || std::string(src.dtype()) != dst.dtype())
      throw std::logic_error("saved input '" + saved + "' (" + dst.dtype() + ", " + std::to_string(dst.count()) +
                             ") does not match " + fwd.name + "'s output '" + output + "' (" + src.dtype() + ", " +
                             std::to_string(src.count()) + ")");
    if (src.bytes() > 0) TUT_CUDA(cudaMemcpy(dst.device(), src.device(), src.bytes(), cudaMemcpyDeviceToDevice));
    ++filled;
  }
  TUT_CUDA(cudaDeviceSynchronize());
  return filled;
}

void fill_saved(const Chain& chain, const Case& c, const InstanceOptions& opt, Instance& into, const ProblemEntry* forward) {
  const ProblemEntry& fwd = forward ? *forward : chain.forward();
  std::vector<bool> done(chain.links.size(), false);
  for (std::size_t k = 0; k < chain.links.size(); ++k) {
    if (done[k]) continue;
    const std::string& output = chain.links[k].second;
    // The first own version that writes it and takes this case (a version may refuse a layout).
    std::size_t fv = fwd.versions.size();
    std::string refusals;
    for (std::size_t j = 0; j < fwd.versions.size() && fv == fwd.versions.size(); ++j) {
      if (fwd.versions[j].kind != Kind::own || !writes(fwd.versions[j], output)) continue;
      try {
        fill_saved_from(chain, fwd, j, c, opt, into);
        fv = j;
      } catch (const Unsupported& e) {
        refusals += std::string(refusals.empty() ? "" : "; ") + fwd.versions[j].name + ": " + e.what();
      }
    }
    if (fv == fwd.versions.size()) {
      if (!refusals.empty())
        throw Unsupported("no own version of " + fwd.name + " takes " + c.name + " to write '" + output + "' (" +
                          refusals + ")");
      throw std::logic_error("no own version of " + fwd.name + " writes '" + output + "', which saved input '" +
                             chain.links[k].first + "' is");
    }
    for (std::size_t j = k; j < chain.links.size(); ++j)
      if (writes(fwd.versions[fv], chain.links[j].second)) done[j] = true;
  }
}

// ---- JSON ----------------------------------------------------------------------------------------

nlohmann::json to_json(const ParamValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* t = std::get_if<std::string>(&v)) return *t;
  return std::get<std::vector<std::int64_t>>(v);
}

nlohmann::json to_json(const Params& p) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : p.items()) out[k] = to_json(v);
  return out;
}

nlohmann::json to_json(const Floor& f) {
  nlohmann::json models = nlohmann::json::object();
  for (const auto& [k, v] : f.models) models[k] = v;
  return {{"bytes", f.bytes}, {"flops", f.flops}, {"models", models}};
}

nlohmann::json case_to_json(const ProblemEntry& p, const Case& c) {
  return {{"name", c.name}, {"shape", c.shape}, {"params", to_json(c.params)}, {"floor", to_json(p.floor(c))}};
}

std::string case_json(const ProblemEntry& p, const Case& c) { return case_to_json(p, c).dump(); }

std::string problems_json(const std::vector<ProblemEntry>& problems) {
  using nlohmann::json;
  json out = json::array();
  for (const auto& p : problems) {
    json versions = json::array(), suite = json::array(), params = json::array();
    for (const auto& v : p.versions)
      versions.push_back({{"name", v.name}, {"kind", kind_name(v.kind)}, {"summary", v.summary}, {"library", v.library},
                          {"writes", v.writes}, {"reads", v.reads}, {"dispatcher", v.dispatcher}});
    for (const auto& c : p.suite) suite.push_back(case_to_json(p, c));
    for (const auto& s : p.params)
      params.push_back({{"key", s.key}, {"default", to_json(s.default_value)}, {"help", s.help}, {"choices", s.choices}});
    out.push_back({{"problem", p.name}, {"dtype", p.dtype}, {"description", p.description}, {"params", params},
                   {"default_case", case_to_json(p, p.default_case)}, {"suite", suite}, {"versions", versions}});
  }
  return out.dump(2);
}

}  // namespace tut
