// Kernels whose machine code is known, for testing the SASS helper. Never run.
#include <cstdio>

__global__ void probe_vector_copy(const float4* __restrict__ in, float4* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

__global__ void probe_scalar_copy(const float* __restrict__ in, float* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

__global__ void probe_warp_sum(const int* __restrict__ in, int* __restrict__ out) {
  int v = in[threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x == 0) *out = v;
}

// The source's ballot over __activemask(), and the correct one over the whole warp.
__global__ void probe_activemask_ballot(const float* __restrict__ x, unsigned* __restrict__ mask, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const unsigned w = __ballot_sync(__activemask(), x[i] > 0);
    if (threadIdx.x % 32 == 0) mask[i / 32] = w;
  }
}

__global__ void probe_full_ballot(const float* __restrict__ x, unsigned* __restrict__ mask, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned w = __ballot_sync(0xffffffffu, i < n && x[i] > 0);
  if (threadIdx.x % 32 == 0 && i < n) mask[i / 32] = w;
}

int main() {
  std::printf("this program only carries kernels for the SASS tests\n");
  return 0;
}
