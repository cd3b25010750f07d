// tut_sass BINARY: one JSON object per kernel in BINARY's SASS, for the profile tool:
//   {"mangled": ..., "name": ..., "instructions": N, "load_bytes_before_first_store": B}
// B is what one thread of the kernel has in flight while it waits for memory (tut/sass.hpp).
#include "tut/sass.hpp"

#include <nlohmann/json.hpp>

#include <exception>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " BINARY\n";
    return 2;
  }
  try {
    for (const auto& k : tut::disassemble(argv[1])) {
      const nlohmann::json j = {{"mangled", k.mangled},
                                {"name", k.name},
                                {"instructions", k.code.size()},
                                {"load_bytes_before_first_store", tut::load_bytes_before_first_store(k)}};
      std::cout << j.dump() << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
