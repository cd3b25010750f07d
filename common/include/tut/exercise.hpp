// Grading an exercise's numeric answer without giving it away: a wrong or missing answer fails
// with its question's number and hint, never the expected value (doctest's CHECK would print it).
//
//   tut::grade_answer(2, exercise::kV2Blocks, expected_blocks, "blocks = min(ceil(n / 256), ...)");
#pragma once

#include <doctest/doctest.h>

#include <string>

namespace tut {

// `answer` -1 means not answered yet (every answers.hpp starts so).
inline void grade_answer(int question, long long answer, long long expected, const std::string& hint) {
  const bool right = answer == expected;
  const std::string message = "question " + std::to_string(question) +
                              (answer == -1 ? " is not answered yet (answers.hpp still says -1)" : " is wrong") +
                              ". Hint: " + hint;
  CHECK_MESSAGE(right, message);
}

}  // namespace tut
