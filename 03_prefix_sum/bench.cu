// Chapter 03 benchmark: the block-wise scans (segscan_*) and the device-wide scans (scan_*,
// exclusive_scan_*) with CUB beside them. `bench_03_prefix_sum --help` lists the options; --list
// the problems, cases and versions. --type i32 keeps the int32 problems; --n N --segment S sets a
// block-wise case's segment.
#include "kernels/segments.cuh"
#include "problems.hpp"
#include "tut/bench.hpp"

#include <iostream>
#include <string>

int main(int argc, char** argv) {
  tut::BenchApp app("03_prefix_sum", "Prefix sums: block-wise scans, and device-wide scans against CUB");
  app.cli()
      .add_option_function<std::int64_t>("--segment", ch03::set_segment,
                                         "Segment length of the block-wise problems' --n/--shape case (1 to 1024; "
                                         "default 1024)")
      ->check(CLI::Range(std::int64_t{1}, ch03::kMaxSegment));
  bool segment = false, shape = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    segment = segment || a.rfind("--segment", 0) == 0;
    shape = shape || a.rfind("--n", 0) == 0 || a.rfind("--shape", 0) == 0;
  }
  if (segment && !shape) {
    std::cerr << "error: --segment sets the segment of the case --n or --shape builds; give one of them too\n";
    return 2;
  }
  app.add(ch03::problems());
  return app.main(argc, argv);
}
