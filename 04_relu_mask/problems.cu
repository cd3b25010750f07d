#include "problems.hpp"

#include "versions.cuh"

std::vector<tut::ProblemEntry> ch04::problems() {
  return {tut::erase(relu_mask_f32()),
          tut::erase(relu_backward_f32()),
          tut::erase(add_relu_mask_f32()),
          tut::erase(relu_mask_f16()),
          tut::erase(relu_backward_f16()),
          tut::erase(add_relu_mask_f16())};
}
