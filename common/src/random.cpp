#include "tut/random.hpp"

#include <cstdlib>
#include <string>

namespace tut {

std::uint64_t test_seed() {
  if (const char* env = std::getenv("TUT_SEED"); env && *env) return std::stoull(env, nullptr, 0);
  return 20261121;
}

}  // namespace tut
