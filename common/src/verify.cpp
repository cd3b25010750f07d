#include "tut/verify.hpp"

#include <stdexcept>

namespace tut {

std::string Rule::describe() const {
  std::ostringstream s;
  switch (kind) {
    case Kind::exact: return "exact";
    case Kind::bitwise: return "bitwise";
    default:
      s << "|got - ref| <= " << atol << " + " << rtol << "*|ref|";
      if (atol_per_term > 0) s << " + " << atol_per_term << "*terms";
      return s.str();
  }
}

std::string VerifyResult::summary() const {
  std::ostringstream s;
  if (ok()) {
    s << "all " << checked << " elements match";
    return s.str();
  }
  s << mismatches << " of " << checked << " elements differ";
  for (const auto& m : first) s << "; [" << m.index << "] got " << m.got << ", expected " << m.expected;
  return s.str();
}

void VerifyResult::merge(const VerifyResult& o, std::int64_t base, std::size_t keep) {
  checked += o.checked;
  mismatches += o.mismatches;
  for (const auto& m : o.first)
    if (first.size() < keep) first.push_back({m.index + base, m.got, m.expected});
}

bool CheckResult::ok() const {
  for (const auto& o : outputs)
    if (!o.result.ok()) return false;
  return true;
}

std::string CheckResult::summary() const {
  std::string s;
  for (const auto& o : outputs) {
    if (!s.empty()) s += "; ";
    s += o.name + ": " + o.result.summary();
  }
  return s.empty() ? "no outputs" : s;
}

const VerifyResult& CheckResult::operator[](const std::string& name) const {
  for (const auto& o : outputs)
    if (o.name == name) return o.result;
  throw std::out_of_range("no output named '" + name + "'");
}

}  // namespace tut
