// Compiles the exercise stub in every build, so a change to the chapter cannot silently break it.
#include "exercises/block_scan_shuffle.cuh"

template void exercise::block_scan_shuffle<int>(cudaStream_t, std::int64_t, std::int64_t, int*, const int*);
template void exercise::block_scan_shuffle<float>(cudaStream_t, std::int64_t, std::int64_t, float*, const float*);
