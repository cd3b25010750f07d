#!/usr/bin/env python3
"""Print the SM version to compile for.

Meson reserves option names that begin with a language name, so `cuda_arch` cannot be declared
in meson.options. Meson still accepts `-Dcuda_arch=NN` without complaint and records it in the
build directory's meson-private/cmd_line.txt, which is where this script reads it:

  1. `-Dcuda_arch=NN` on the command line of the meson process that runs this script
     (first `meson setup`, or `meson setup --reconfigure -Dcuda_arch=NN`);
  2. `cuda_arch = NN` in BUILD_ROOT/meson-private/cmd_line.txt (later regenerations, and
     `meson configure -Dcuda_arch=NN`);
  3. otherwise "auto": the first visible GPU's compute capability, or 90 without a GPU.

Usage: detect_cuda_arch.py BUILD_ROOT
"""
import configparser
import os
import re
import subprocess
import sys

FALLBACK = "90"


def from_parent_command_line():
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            args = f.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    found = None
    for i, a in enumerate(args):
        if a.startswith("-Dcuda_arch="):
            found = a.split("=", 1)[1]
        elif a == "-D" and i + 1 < len(args) and args[i + 1].startswith("cuda_arch="):
            found = args[i + 1].split("=", 1)[1]
    return found


def from_saved_command_line(build_root):
    cfg = configparser.ConfigParser()
    try:
        cfg.read(os.path.join(build_root, "meson-private", "cmd_line.txt"))
        return cfg.get("options", "cuda_arch", fallback=None)
    except configparser.Error:
        return None


def visible_gpu_arch():
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.match(r"\s*(\d+)\.(\d+)", out)
    return f"{m.group(1)}{m.group(2)}" if m else None


def main():
    build_root = sys.argv[1] if len(sys.argv) > 1 else "."
    want = from_parent_command_line() or from_saved_command_line(build_root) or "auto"
    if want == "auto":
        print(visible_gpu_arch() or FALLBACK)
        return 0
    if not re.fullmatch(r"\d{2,3}[af]?", want):
        print(f"cuda_arch must look like 90, 80 or 90a, not '{want}'", file=sys.stderr)
        return 1
    print(want)
    return 0


if __name__ == "__main__":
    sys.exit(main())
