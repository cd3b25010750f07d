#include "problems.hpp"

#include "versions.cuh"

std::vector<tut::ProblemEntry> ch01::problems() {
  return {tut::erase(relu_problem()),
          tut::erase(mul_problem())};
}
