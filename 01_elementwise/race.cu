// Chapter 01's problems behind tut's C interface (tut/race.hpp), for common/tools/torch_peers.py,
// which times our best version and PyTorch's operator in one process.
#include "tut/race.hpp"
#include "problems.hpp"

TUT_RACE_LIBRARY(ch01::problems)
