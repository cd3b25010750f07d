// Compiles the exercise stub in every build, even with -Dexercises=false, so a change that
// breaks it is caught by CI before a student meets it.
#include "exercises/relu_vectorized.cuh"

extern void (*const exercise_stub_launcher)(cudaStream_t, std::int64_t, float*, const float*);
void (*const exercise_stub_launcher)(cudaStream_t, std::int64_t, float*, const float*) = &exercise::relu_vectorized;
