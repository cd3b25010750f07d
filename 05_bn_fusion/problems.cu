// Chapter 05's problems, in the order the benchmark runs them: what common builds the benchmark and
// the race module from (tut/chapter.hpp). The ladders are compiled here, once.
#include "tut/chapter.hpp"
#include "versions.cuh"

const tut::Chapter& tut::chapter() {
  static const Chapter c{"05_bn_fusion",
                         "BatchNorm + ReLU (+ Add) in training, fused forward and backward, NCHW and NHWC, with a bitmask",
                         {erase(ch05::bn_relu_f32()), erase(ch05::bn_relu_backward_f32()), erase(ch05::bn_add_relu_f32()),
                          erase(ch05::bn_add_relu_backward_f32()), erase(ch05::bn_relu_f16()),
                          erase(ch05::bn_relu_backward_f16()), erase(ch05::bn_add_relu_f16()),
                          erase(ch05::bn_add_relu_backward_f16()), erase(ch05::bn_relu_inference_f32())}};
  return c;
}
