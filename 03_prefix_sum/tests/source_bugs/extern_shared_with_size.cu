// The source's kernel_1 declares its shared buffer as `extern __shared__ int buffer[N]`. The chapter
// builds with nvcc's warning #20044 as an error; tests/expect_failure.py checks this file is refused.
template <int N>
__global__ void shared_scan_step(const int* in, int* out) {
  extern __shared__ int buffer[N];
  buffer[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = buffer[threadIdx.x];
}
template __global__ void shared_scan_step<256>(const int*, int*);
