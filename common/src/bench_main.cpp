// Every chapter's benchmark: this main() linked with the chapter's problems.cu (tut::chapter()).
#include "tut/bench.hpp"

int main(int argc, char** argv) { return tut::bench_main(argc, argv); }
