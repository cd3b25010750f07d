// Chapter 03's problems, in the order the benchmark runs them: what common builds the benchmark and
// the race module from (tut/chapter.hpp). The ladders are compiled here, once.
#include "tut/chapter.hpp"
#include "versions.cuh"

const tut::Chapter& tut::chapter() {
  static const Chapter c{"03_prefix_sum", "Prefix sums: block-wise scans, and device-wide scans against CUB",
                         {erase(ch03::segscan_problem<int>()), erase(ch03::segscan_problem<float>()),
                          erase(ch03::scan_problem<int>()), erase(ch03::exclusive_scan_problem<int>()),
                          erase(ch03::scan_problem<float>()), erase(ch03::exclusive_scan_problem<float>())}};
  return c;
}
