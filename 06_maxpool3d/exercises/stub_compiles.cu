// Compiles the exercise stub in every build, even with -Dexercises=false, so a change that
// breaks it is caught by CI before a student meets it.
#include "exercises/unrolled_padded.cuh"

extern void (*const exercise_stub_launcher)(cudaStream_t, const ch06::ForwardArgs<float>&);
void (*const exercise_stub_launcher)(cudaStream_t, const ch06::ForwardArgs<float>&) = &exercise::unrolled_padded;
