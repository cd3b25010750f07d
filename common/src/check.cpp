#include "tut/check.hpp"

#include <sstream>

namespace tut {

std::string describe_cuda_error(cudaError_t code, const char* expr, const char* file, int line) {
  std::ostringstream s;
  s << expr << " failed at " << file << ":" << line << ": " << cudaGetErrorString(code) << " ("
    << cudaGetErrorName(code) << ")";
  return s.str();
}

}  // namespace tut
