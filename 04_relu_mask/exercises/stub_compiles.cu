// Compiles the exercise stub in every build, even with -Dexercises=false, so a change that
// breaks it is caught by CI before a student meets it.
#include "exercises/add_relu_ballot.cuh"

extern void (*const exercise_stub_launcher)(cudaStream_t, const ch04::ForwardArgs<float>&);
void (*const exercise_stub_launcher)(cudaStream_t, const ch04::ForwardArgs<float>&) = &exercise::add_relu_ballot;
