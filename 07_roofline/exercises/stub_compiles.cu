// Compiles the exercise's answers in every build, even with -Dexercises=false, so a change that
// breaks them is caught by CI before a student meets it.
#include "exercises/answers.hpp"

extern const long long exercise_stub_answers[3];
const long long exercise_stub_answers[3] = {exercise::kBoundOnH100, exercise::kPredictedMicrosecondsOnOther,
                                            exercise::kPercentOfRoofOnH100};
