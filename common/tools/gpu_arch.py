#!/usr/bin/env python3
"""Print the SM version to compile for, from the gpu_arch build option.

  gpu_arch.py VALUE [BUILD_ROOT]

VALUE is 'auto' (the first visible GPU's compute capability, or 90 without one) or a version
such as 80, 90 or 90a. Anything else is an error, and so is a `-Dcuda_arch...` on the meson
command line that runs this script: Meson accepts any option whose name starts with a language
name without complaint, so a leftover or misspelt `-Dcuda_arch=80` would otherwise be ignored
silently and the build would target another GPU. Options set later with `meson configure` are
read from BUILD_ROOT/meson-private/cmd_line.txt.
"""
import configparser
import os
import re
import subprocess
import sys

FALLBACK = "90"


def parent_command_line():
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            return f.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def saved_options(build_root):
    cfg = configparser.ConfigParser()
    try:
        cfg.read(os.path.join(build_root, "meson-private", "cmd_line.txt"))
        return list(cfg["options"].keys()) if cfg.has_section("options") else []
    except configparser.Error:
        return []


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
    value = sys.argv[1] if len(sys.argv) > 1 else "auto"
    build_root = sys.argv[2] if len(sys.argv) > 2 else "."
    for arg in parent_command_line() + saved_options(build_root):
        if re.match(r"(-D)?cuda_arch", arg):
            print(f"'{arg}' is not an option of this project: the architecture is -Dgpu_arch=NN "
                  "(auto, 80, 90, 90a, ...)", file=sys.stderr)
            return 1
    if value == "auto":
        print(visible_gpu_arch() or FALLBACK)
        return 0
    if not re.fullmatch(r"\d{2,3}[af]?", value):
        print(f"gpu_arch must be 'auto' or an SM version such as 80, 90 or 90a, not '{value}'", file=sys.stderr)
        return 1
    print(value)
    return 0


if __name__ == "__main__":
    sys.exit(main())
