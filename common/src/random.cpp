#include "tut/random.hpp"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tut {

std::uint64_t parse_seed(const char* text) {
  const std::string t = text ? text : "";
  if (t.empty() || t[0] == '-' || t[0] == '+')
    throw std::invalid_argument("seed '" + t + "' is not a non-negative integer");
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(t.c_str(), &end, 0);
  if (errno == ERANGE) throw std::invalid_argument("seed '" + t + "' does not fit in 64 bits");
  if (end == t.c_str() || *end != '\0') throw std::invalid_argument("seed '" + t + "' is not a non-negative integer");
  return v;
}

std::uint64_t test_seed() {
  if (const char* env = std::getenv("TUT_SEED"); env && *env) {
    try {
      return parse_seed(env);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("TUT_SEED: ") + e.what());
    }
  }
  return 20261121;
}

}  // namespace tut
