// Claims about generated code, checked by tests: disassemble a built binary with
// `cuobjdump -sass` and inspect each kernel's instructions. No GPU is needed.
//
//   auto sass = tut::disassemble(binary_path);          // every kernel in the fatbin
//   const auto& fn = tut::find_kernel(sass, "copy_int4");
//   CHECK(tut::count_memory_ops(fn, "LDG", 128) > 0);     // 128-bit global loads
//   CHECK(tut::count_opcode(fn, "SHFL") > 0);             // warp shuffles
//   CHECK(tut::count_opcode(fn, "LDL") == 0);             // no local-memory spills
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tut {

struct SassInstruction {
  long address = 0;       // byte offset in the kernel, as printed: /*0130*/
  std::string opcode;     // "LDG.E.128.CONSTANT"
  std::string text;       // the whole instruction, without address and encoding
};

struct SassKernel {
  std::string mangled;     // as cuobjdump prints it
  std::string name;        // demangled
  std::vector<SassInstruction> code;
};

// Where cuobjdump is: $CUOBJDUMP, then PATH, then $CUDA_PATH/bin and /usr/local/cuda/bin.
std::optional<std::string> find_cuobjdump();

// The binary a SASS test inspects: $TUT_SASS_BINARY, which the chapter's meson.build sets to
// the built target. Throws std::runtime_error when unset.
std::string sass_subject();

// Splits `cuobjdump -sass` output into kernels. Pure text processing (unit-tested on its own).
std::vector<SassKernel> parse_sass(const std::string& cuobjdump_output);

// Runs cuobjdump on `binary` (executable, object or static library). Throws std::runtime_error
// when cuobjdump cannot be found or fails.
std::vector<SassKernel> disassemble(const std::string& binary);

// The one kernel whose demangled name contains `fragment`; throws if none or several match,
// listing the candidates.
const SassKernel& find_kernel(const std::vector<SassKernel>& kernels, std::string_view fragment);

// Instructions whose opcode starts with `prefix` ("SHFL", "VOTE", "LDL").
int count_opcode(const SassKernel& k, std::string_view prefix);

// Instructions that read the set of lanes active at that point: `VOTE.ANY Rd, PT, PT`, what
// __activemask() compiles to (a ballot of a constant true over whatever lanes happen to be there).
// A ballot of a predicate over a named mask is `VOTE.ANY Rd, PT, Pn` instead.
int count_active_mask_reads(const SassKernel& k);

// Access width in bits of a load/store opcode: .128 -> 128, .64 -> 64, .U16/.S16 -> 16,
// .U8/.S8 -> 8, otherwise 32.
int access_bits(std::string_view opcode);

// The body of the innermost loop around the first instruction whose opcode starts with
// `opcode_prefix`: from the target of the nearest backward BRA after it, to that BRA. Empty when
// the instruction is not inside a loop. Use it to compare per-iteration cost.
std::vector<SassInstruction> loop_around(const SassKernel& k, std::string_view opcode_prefix);

// Every loop of the kernel: for each backward branch, the instructions from its target to it.
std::vector<std::vector<SassInstruction>> loops(const SassKernel& k);

// The loop with the most instructions whose opcode starts with `opcode_prefix` (the unrolled main
// loop, rather than the remainder loop the compiler runs before it); empty when none has any.
std::vector<SassInstruction> main_loop(const SassKernel& k, std::string_view opcode_prefix);

// True when two kernels have the same instructions, operands included.
bool same_code(const SassKernel& a, const SassKernel& b);

// Bytes of global loads one thread issues before its first global store: from the kernel's entry,
// or around any loop, whichever is larger. What a thread of this kernel has in flight while it
// waits for memory in its steady state, read off the SASS.
int load_bytes_before_first_store(const SassKernel& k);

// Memory instructions of a kind ("LDG", "STG", "LDS", ...) with the given width in bits.
int count_memory_ops(const SassKernel& k, std::string_view kind, int bits);

}  // namespace tut
