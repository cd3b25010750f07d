// Chapter 04's problems, in the order the benchmark runs them: what common builds the benchmark and
// the race module from (tut/chapter.hpp). The ladders are compiled here, once.
#include "tut/chapter.hpp"
#include "versions.cuh"

const tut::Chapter& tut::chapter() {
  static const Chapter c{"04_relu_mask", "ReLU with a mask for its backward: byte masks, per-thread bytes, warp ballots",
                         {erase(ch04::relu_mask_f32()), erase(ch04::relu_backward_f32()),
                          erase(ch04::add_relu_mask_f32()), erase(ch04::relu_mask_f16()),
                          erase(ch04::relu_backward_f16()), erase(ch04::add_relu_mask_f16())}};
  return c;
}
