// Compiles the exercise stub in every build, even with -Dexercises=false, so a change that breaks
// it is caught by CI before a student meets it.
#include "exercises/bn_relu_apply.cuh"

extern void (*const exercise_stub_launcher)(cudaStream_t, const ch05::FwdArgs<float>&, const ch05::ChannelParams&);
void (*const exercise_stub_launcher)(cudaStream_t, const ch05::FwdArgs<float>&, const ch05::ChannelParams&) =
    &exercise::bn_relu_apply;
