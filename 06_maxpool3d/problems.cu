// Chapter 06's problems, in the order the benchmark runs them: what common builds the benchmark and
// the race module from (tut/chapter.hpp). The ladders are compiled here, once.
#include "tut/chapter.hpp"
#include "versions.cuh"

const tut::Chapter& tut::chapter() {
  static const Chapter c{"06_maxpool3d",
                         "MaxPool3D: unrolled windows, interior and border, shared tiles, thread layouts, the separable "
                         "form, channels-last, indices and a deterministic backward",
                         {erase(ch06::maxpool3d_f32()), erase(ch06::maxpool3d_backward_f32()),
                          erase(ch06::maxpool3d_f16())}};
  return c;
}
