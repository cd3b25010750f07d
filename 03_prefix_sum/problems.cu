#include "problems.hpp"

#include "versions.cuh"

std::vector<tut::ProblemEntry> ch03::problems() {
  return {tut::erase(segscan_problem<int>()),
          tut::erase(segscan_problem<float>()),
          tut::erase(scan_problem<int>()),
          tut::erase(exclusive_scan_problem<int>()),
          tut::erase(scan_problem<float>()),
          tut::erase(exclusive_scan_problem<float>())};
}

void ch03::set_segment(std::int64_t segment) { segment_option() = segment; }
