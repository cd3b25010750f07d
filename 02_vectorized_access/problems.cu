#include "problems.hpp"

#include "versions.cuh"

std::vector<tut::ProblemEntry> ch02::problems() {
  return {tut::erase(copy_problem()),
          tut::erase(mul_problem()),
          tut::erase(fma_problem())};
}
