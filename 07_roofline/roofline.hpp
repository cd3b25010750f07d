// The roofline model, on the host: how many operations and bytes a kernel must do and move, what
// the machine can do of each per second, and what that bounds the kernel's time to. No CUDA.
//
//   arithmetic intensity  I = operations / bytes                          (FLOP per byte)
//   ridge point           I* = peak rate / bandwidth                      (FLOP per byte)
//   attainable rate       min(peak, bandwidth x I)                        (FLOP/s)
//   bound                 memory if I < I*, math if I > I*
//   predicted duration    max(bytes / bandwidth, operations / peak)       (the larger of the two times)
//   utilization           measured rate / the device's rate
//
// Counts, with BPE the bytes per element:
//   element-wise   N x OPE operations, (inputs + outputs) x N x BPE bytes
//   matrix product 2 x M x N x K operations, (M x K + K x N + M x N) x BPE bytes
//   convolution    2 x N x Ho x Wo x Ci x Co x R x S operations (forward), input + weights + output bytes
// An operand moved more than once (re-read because it did not stay in cache) multiplies its bytes
// by its re-read factor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ch07 {

struct Work {
  double flops = 0;  // operations (one FMA is two)
  double bytes = 0;  // through device memory

  double intensity() const {
    if (bytes <= 0) throw std::invalid_argument("arithmetic intensity: a kernel that moves no bytes");
    return flops / bytes;
  }
};

struct Machine {
  double peak_flops = 0;  // per second
  double bandwidth = 0;   // bytes per second

  double ridge() const {
    if (peak_flops <= 0 || bandwidth <= 0) throw std::invalid_argument("a machine needs a positive peak and bandwidth");
    return peak_flops / bandwidth;
  }
  // The highest rate a kernel of intensity `i` can reach: the lower of the two roofs.
  double attainable(double i) const { return std::min(peak_flops, bandwidth * i); }
};

enum class Bound { memory, math };
inline const char* bound_name(Bound b) { return b == Bound::memory ? "memory" : "math"; }

// At the ridge exactly both limits meet; it counts as memory-bound here (more bandwidth would not
// help either, but the bytes are what the kernel is made of).
inline Bound classify(const Work& w, const Machine& m) {
  return w.intensity() > m.ridge() ? Bound::math : Bound::memory;
}

inline double memory_time(const Work& w, const Machine& m) { return w.bytes / m.bandwidth; }
inline double math_time(const Work& w, const Machine& m) { return w.flops / m.peak_flops; }
// Seconds: the larger of the two times, as if the other overlapped it completely.
inline double predicted_time(const Work& w, const Machine& m) { return std::max(memory_time(w, m), math_time(w, m)); }

// The fraction of the roof a measured kernel reaches at its intensity.
inline double fraction_of_roof(const Work& w, const Machine& m, double seconds) {
  if (seconds <= 0) throw std::invalid_argument("a measured time must be positive");
  return (w.flops / seconds) / m.attainable(w.intensity());
}

// ---- Counts -------------------------------------------------------------------------------------

// N elements, `ope` operations each, `inputs` arrays read and `outputs` written, `bpe` bytes an element.
inline Work elementwise(double n, double ope, int inputs, int outputs, double bpe) {
  if (n < 0 || ope < 0 || inputs < 0 || outputs < 0 || bpe <= 0)
    throw std::invalid_argument("elementwise: counts must be non-negative and bpe positive");
  return {n * ope, (inputs + outputs) * n * bpe};
}

// C (M x N) = A (M x K) times B (K x N), each operand moved once (`reread_b` times for B).
inline Work matmul(double m, double n, double k, double bpe, double reread_b = 1) {
  if (m <= 0 || n <= 0 || k <= 0 || bpe <= 0 || reread_b < 1)
    throw std::invalid_argument("matmul: sizes and bpe must be positive, a re-read factor at least 1");
  return {2 * m * n * k, (m * k + reread_b * k * n + m * n) * bpe};
}

// Forward convolution: N images of Ci x H x W, Co filters of Ci x R x S, output N x Co x Ho x Wo.
inline Work conv2d_forward(double n, double ci, double h, double w, double co, double r, double s, double ho,
                           double wo, double bpe, double reread_input = 1) {
  if (n <= 0 || ci <= 0 || h <= 0 || w <= 0 || co <= 0 || r <= 0 || s <= 0 || ho <= 0 || wo <= 0 || bpe <= 0 ||
      reread_input < 1)
    throw std::invalid_argument("conv2d_forward: sizes and bpe must be positive, a re-read factor at least 1");
  const double input = n * ci * h * w * reread_input, weights = co * ci * r * s, output = n * co * ho * wo;
  return {2 * n * ho * wo * ci * co * r * s, (input + weights + output) * bpe};
}

// ---- Theoretical rates from the device -----------------------------------------------------------

// FP32 lanes per SM, and the FP16 (non-tensor, packed half2) rate as a multiple of the FP32 rate,
// by compute capability, from NVIDIA's architecture whitepapers: Volta (7.0), Turing (7.5),
// Ampere GA100 (8.0), GA10x (8.6, 8.7), Ada (8.9), Hopper (9.0). No device attribute gives these;
// an architecture not listed has none, and the tools print the measured value alone.
struct Lanes {
  int fp32_per_sm = 0;
  int fp16_per_fp32 = 0;
};
inline Lanes lanes_of(int cc_major, int cc_minor) {
  const int cc = 10 * cc_major + cc_minor;
  switch (cc) {
    case 70: return {64, 2};
    case 75: return {64, 2};
    case 80: return {64, 4};
    case 86: return {128, 1};
    case 87: return {128, 1};
    case 89: return {128, 1};
    case 90: return {128, 2};
    default: return {};
  }
}

// FLOP/s of FP32 FMA at `clock_hz`: every lane one FMA (two FLOPs) per clock.
inline double fp32_peak(int sm_count, const Lanes& l, double clock_hz) { return 2.0 * sm_count * l.fp32_per_sm * clock_hz; }
inline double fp16_peak(int sm_count, const Lanes& l, double clock_hz) { return fp32_peak(sm_count, l, clock_hz) * l.fp16_per_fp32; }
// Bytes per second: two transfers per memory clock over the whole bus.
inline double dram_peak(double mem_clock_hz, int bus_width_bits) { return 2.0 * mem_clock_hz * bus_width_bits / 8.0; }

}  // namespace ch07
