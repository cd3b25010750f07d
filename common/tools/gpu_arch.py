#!/usr/bin/env python3
"""Print the SM version to compile for, from the gpu_arch build option.

  gpu_arch.py VALUE [BUILD_ROOT]          print the SM version (what the build runs)
  gpu_arch.py --check NAME=VALUE ...      check options before they reach a build directory
  gpu_arch.py --help

VALUE is 'auto' (the first visible GPU's compute capability, or 90 without one) or a version
such as 80, 90 or 90a. Anything else is an error, and so is a `-Dcuda_arch...` on the meson
command line that runs this script: Meson accepts any option whose name starts with a language
name without complaint, so a leftover or misspelt `-Dcuda_arch=80` would otherwise be ignored
silently and the build would target another GPU. Options set later with `meson configure` are
read from BUILD_ROOT/meson-private/cmd_line.txt.

--check applies the same two rules to the -D options of a command line (given without the -D),
and exits 1 if one breaks them. `./tutorial` runs it before `meson configure`: a string option
takes any value, so `meson configure -Dgpu_arch=banana` would store the value, and every later
build of that directory would fail on it. Other options are left to Meson, which checks their
types itself.
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


def option_error(name, value):
    """What is wrong with the option NAME=VALUE (NAME may carry a "subproject:" prefix), or None."""
    bare = name.rpartition(":")[2]
    if re.match(r"(-D)?cuda_arch", bare):
        return (f"'-D{name}={value}' is not an option of this project: the architecture is -Dgpu_arch=NN "
                "(auto, 80, 90, 90a, ...)")
    if bare == "gpu_arch" and value != "auto" and not re.fullmatch(r"\d{2,3}[af]?", value):
        return f"gpu_arch must be 'auto' or an SM version such as 80, 90 or 90a, not '{value}'"
    return None


def check(options):
    errors = []
    for option in options:
        name, eq, value = option.partition("=")
        if not eq or not name:
            errors.append(f"'{option}' is not an option setting: write NAME=VALUE, e.g. gpu_arch=80")
        elif (error := option_error(name, value)) is not None:
            errors.append(error)
    for error in errors:
        print(error, file=sys.stderr)
    return 1 if errors else 0


def main(argv):
    if argv in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if argv and argv[0] == "--check":
        return check(argv[1:])
    if len(argv) == 1 and argv[0].startswith("-") or len(argv) > 2:
        print(f"usage: gpu_arch.py VALUE [BUILD_ROOT] | --check NAME=VALUE ... | --help (got {' '.join(argv)})",
              file=sys.stderr)
        return 2
    value = argv[0] if argv else "auto"
    build_root = argv[1] if len(argv) > 1 else "."
    for arg in parent_command_line() + saved_options(build_root):
        if re.match(r"(-D)?cuda_arch", arg):
            print(f"'{arg}' is not an option of this project: the architecture is -Dgpu_arch=NN "
                  "(auto, 80, 90, 90a, ...)", file=sys.stderr)
            return 1
    error = option_error("gpu_arch", value)
    if error:
        print(error, file=sys.stderr)
        return 1
    if value == "auto":
        print(visible_gpu_arch() or FALLBACK)
        return 0
    print(value)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
