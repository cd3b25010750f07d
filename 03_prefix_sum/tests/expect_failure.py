#!/usr/bin/env python3
"""Passes when a command fails with a given message: expect_failure.py TEXT -- COMMAND ...

For mistakes the build must refuse (a source's bug that the chapter's flags turn into an error):
the test fails if the command succeeds, or fails for another reason than TEXT."""
import subprocess
import sys

if __name__ == "__main__":
    sep = sys.argv.index("--")
    text, cmd = " ".join(sys.argv[1:sep]), sys.argv[sep + 1:]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    print(out)
    if proc.returncode == 0:
        sys.exit(f"expected the command to fail with '{text}', but it succeeded")
    if text not in out:
        sys.exit(f"the command failed, but without '{text}'")
    print(f"failed as expected: '{text}'")
