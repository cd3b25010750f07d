#!/usr/bin/env python3
"""The exe_wrapper of the sanitizer test setups (--setup sanitize, racecheck, synccheck, initcheck).

  sanitize.py TOOL PROGRAM [ARGS...]

Runs PROGRAM under `compute-sanitizer --tool TOOL --error-exitcode 1`. Where compute-sanitizer is
not installed, says so and exits 77, which Meson reports as a skipped test.
"""
import os
import shutil
import sys


def find_sanitizer():
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    candidates = []
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(os.path.join(os.path.dirname(os.path.realpath(nvcc)), "compute-sanitizer"))
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root:
            candidates.append(os.path.join(root, "bin", "compute-sanitizer"))
    return next((c for c in candidates if os.access(c, os.X_OK)), None)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    tool, cmd = sys.argv[1], sys.argv[2:]
    exe = find_sanitizer()
    if not exe:
        print("compute-sanitizer not found (it ships with the CUDA toolkit, in its bin/): "
              f"skipping {os.path.basename(cmd[0])} under --tool {tool}")
        return 77
    sys.stdout.flush()
    os.execv(exe, [exe, "--tool", tool, "--error-exitcode", "1", *cmd])


if __name__ == "__main__":
    sys.exit(main())
