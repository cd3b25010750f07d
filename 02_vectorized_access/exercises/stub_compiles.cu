// Compiles the exercise stub in every build, even with -Dexercises=false, so a change that
// breaks it is caught by CI before a student meets it.
#include "exercises/fma_f16.cuh"

extern void (*const exercise_stub_launcher)(cudaStream_t, std::int64_t, __half*, const __half*, const __half*,
                                            const __half*);
void (*const exercise_stub_launcher)(cudaStream_t, std::int64_t, __half*, const __half*, const __half*,
                                     const __half*) = &exercise::fma_f16;
