#!/usr/bin/env python3
"""Runs one of tests/source_bugs.cu's reproductions under compute-sanitizer and checks the tool
reports it: sanitizer_demo.py TOOL EXPECTED_TEXT PROGRAM BUG

Prints the report (the lesson quotes it). Exits 77 (skipped) without compute-sanitizer or without
a GPU, 1 when the tool stays silent."""
import os
import shutil
import subprocess
import sys


def find_sanitizer():
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for d in [os.path.dirname(os.path.realpath(shutil.which("nvcc") or "/nonexistent")), "/usr/local/cuda/bin"]:
        cand = os.path.join(d, "compute-sanitizer")
        if os.access(cand, os.X_OK):
            return cand
    return None


def main():
    tool, expected, program, bug = sys.argv[1:5]
    sanitizer = find_sanitizer()
    if not sanitizer:
        print("compute-sanitizer not found: skipping")
        return 77
    probe = subprocess.run([program, "--probe"], capture_output=True, text=True)
    if probe.returncode == 77:
        print(probe.stdout.strip() or "no CUDA device: skipping")
        return 77
    proc = subprocess.run([sanitizer, "--tool", tool, "--print-limit", "4", program, bug], capture_output=True,
                          text=True, timeout=240)
    out = proc.stdout + proc.stderr
    print(out)
    if expected not in out:
        print(f"FAIL: {tool} did not report '{expected}' for {bug}")
        return 1
    print(f"{tool} reports the bug '{bug}' as expected ('{expected}')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
