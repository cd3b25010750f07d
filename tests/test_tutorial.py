#!/usr/bin/env python3
"""What ./tutorial promises about options, suites and its test summary, checked on a stand-in.

The stand-in is a copy of ./tutorial and common/tools/gpu_arch.py in a temporary folder, next to a
tiny Meson project with the real meson.options: one chapter, "ch", whose tests pass, skip with a
reason, or (suite large) leave a file behind to show that they ran. Nothing is compiled, no GPU
is needed, and the repository's own build directories are never touched. The toolkit and apt are
stood in for by small scripts, so the tutorial's bootstrap installs nothing.

Checked, each as a ./tutorial command a learner would type:
  - a bad -D value is refused before it reaches an existing build, which keeps working;
  - a build directory broken anyway (a bad value stored by meson itself) gets one line saying how
    to start it afresh, and following that line works;
  - --builddir and -D without a value give a message, not a bash error;
  - a --suite that names nothing is an error, and no summary from an earlier run is printed;
  - a run in which no test ran fails (a --list runs none, and is not an error);
  - --suite CHAPTER leaves out the large suite; --suite large and --suite CH:large run it;
  - the summary lists every skipped test with the reason it printed;
  - gpu_arch.py --help, --check, and a bad value.

Exits 77 (skipped) where meson or ninja is not on PATH: run it through ./tutorial test.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = 77

STAND_IN_ROOT = """\
project('stand-in', meson_version: '>= 1.3.0')
# The same check of gpu_arch as common/meson.build's: a bad stored value breaks regeneration.
arch = run_command(find_program('python3'), 'common/tools/gpu_arch.py', get_option('gpu_arch'),
  meson.global_build_root(), check: false)
if arch.returncode() != 0
  error(arch.stderr().strip())
endif
subproject('ch')
add_test_setup('default', exclude_suites: ['large'], is_default: true)
"""

STAND_IN_CHAPTER = """\
project('ch', meson_version: '>= 1.3.0')
py = find_program('python3')
t = files('stand_in_test.py')
test('passes', py, args: [t, 'pass'], suite: ['cpu'])
test('gpu', py, args: [t, 'no_device'], suite: ['gpu'])
test('sanitizer', py, args: [t, 'no_sanitizer'], suite: ['sanitizer_demo'])
test('gpu_large', py, args: [t, 'large', meson.global_build_root() / 'large-ran'], suite: ['large'])
"""

# What the chapters' tests print when they skip: a doctest executable (common/src/test_main.cpp)
# names the device on its first line; the sanitizer wrapper says what it did not find.
STAND_IN_TEST = """\
import sys
mode = sys.argv[1]
if mode == "pass":
    print("all good")
elif mode == "no_device":
    print("seed 1 (set TUT_SEED to replay); device: none; cuobjdump: /usr/local/cuda/bin/cuobjdump")
    print("[doctest] test cases: 0 | 0 passed | 0 failed | 3 skipped")
    print("every test case was skipped (each needs a CUDA device or cuobjdump, see above): reporting SKIP")
    sys.exit(77)
elif mode == "no_sanitizer":
    print("compute-sanitizer not found: skipping")
    sys.exit(77)
elif mode == "large":
    open(sys.argv[2], "w").close()
"""


class StandIn:
    def __init__(self, top):
        self.repo = top / "repo"
        self.bin = top / "bin"
        self.build = self.repo / "build"
        repo = self.repo
        (repo / "common" / "tools").mkdir(parents=True)
        (repo / "ch").mkdir()
        (repo / "subprojects").mkdir()
        shutil.copy2(ROOT / "tutorial", repo / "tutorial")
        shutil.copy2(ROOT / "common" / "tools" / "gpu_arch.py", repo / "common" / "tools" / "gpu_arch.py")
        shutil.copy2(ROOT / "meson.options", repo / "meson.options")
        (repo / "meson.build").write_text(STAND_IN_ROOT)
        (repo / "chapters.list").write_text("ch | a stand-in chapter\n")
        (repo / "ch" / "meson.build").write_text(STAND_IN_CHAPTER)
        (repo / "ch" / "stand_in_test.py").write_text(STAND_IN_TEST)
        # A virtual environment in name only: the tutorial finds meson and ninja in it, and its
        # stamp says they are the pinned versions, so nothing is installed.
        venv = repo / ".venv" / "bin"
        venv.mkdir(parents=True)
        os.symlink(sys.executable, venv / "python")
        for tool in ("meson", "ninja"):
            os.symlink(shutil.which(tool), venv / tool)
        script = (ROOT / "tutorial").read_text()
        meson_version = re.search(r"^MESON_VERSION=(\S+)", script, re.M).group(1)
        ninja_version = re.search(r"^NINJA_VERSION=(\S+)", script, re.M).group(1)
        (repo / ".venv" / ".tutorial-stamp").write_text(f"meson=={meson_version} ninja=={ninja_version}\n")
        # The toolkit's programs, present and doing nothing; apt-get and sudo, present and refusing.
        self.bin.mkdir()
        for name, rc in (("nvcc", 0), ("cuobjdump", 0), ("nvdisasm", 0), ("apt-get", 1), ("sudo", 1)):
            path = self.bin / name
            path.write_text(f"#!/bin/sh\nexit {rc}\n")
            path.chmod(0o755)
        self.env = dict(os.environ, PATH=f"{self.bin}{os.pathsep}{os.environ['PATH']}")

    def run(self, *args):
        return subprocess.run(["bash", str(self.repo / "tutorial"), *args], cwd=self.repo, env=self.env,
                              capture_output=True, text=True, timeout=300)

    def meson(self, *args):
        return subprocess.run([str(self.repo / ".venv" / "bin" / "meson"), *args], cwd=self.repo, env=self.env,
                              capture_output=True, text=True, timeout=300)

    def saved_options(self):
        return (self.build / "meson-private" / "cmd_line.txt").read_text()


class Checks:
    def __init__(self):
        self.failed = 0

    def expect(self, ok, what, result=None):
        print(f"{'ok  ' if ok else 'FAIL'}  {what}")
        if not ok:
            self.failed += 1
            if result is not None:
                print(f"      rc {result.returncode}\n      stdout: {result.stdout[-2000:]!r}\n"
                      f"      stderr: {result.stderr[-2000:]!r}")


def last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def check_gpu_arch(c):
    tool = [sys.executable, str(ROOT / "common" / "tools" / "gpu_arch.py")]

    def run(*args):
        return subprocess.run([*tool, *args], capture_output=True, text=True, timeout=60)

    r = run("--help")
    c.expect(r.returncode == 0 and "gpu_arch.py VALUE" in r.stdout, "gpu_arch.py --help prints its usage", r)
    r = run("banana", ".")
    c.expect(r.returncode == 1 and "not 'banana'" in r.stderr, "gpu_arch.py refuses an architecture 'banana'", r)
    r = run("90a", ".")
    c.expect(r.returncode == 0 and r.stdout.strip() == "90a", "gpu_arch.py prints a valid architecture", r)
    r = run("--check", "gpu_arch=90a", "exercises=true", "common:gpu_arch=auto")
    c.expect(r.returncode == 0, "gpu_arch.py --check accepts valid options", r)
    for bad in ("gpu_arch=banana", "01_elementwise:gpu_arch=9", "cuda_arch=80", "gpu_arch"):
        r = run("--check", bad)
        c.expect(r.returncode == 1 and r.stderr.strip(), f"gpu_arch.py --check refuses {bad}", r)
    r = run("--bogus")
    c.expect(r.returncode == 2 and "usage" in r.stderr, "gpu_arch.py refuses an unknown flag", r)


def check_arguments(s, c):
    for args in (["--builddir"], ["--builddir="], ["--builddir", "-Dgpu_arch=80", "build"], ["-D"]):
        r = s.run(*args)
        c.expect(r.returncode == 1 and "[tutorial] error:" in r.stderr and "unbound variable" not in r.stderr,
                 f"./tutorial {' '.join(args)}: a message, not a bash error", r)
    r = s.run("help")
    c.expect(r.returncode == 0 and "rm -rf build" in r.stdout, "./tutorial help says how to recover a broken build", r)


def check_options(s, c):
    r = s.run("-Dgpu_arch=banana", "build")
    c.expect(r.returncode == 1 and "not 'banana'" in r.stderr and not s.build.exists(),
             "-Dgpu_arch=banana on a fresh checkout: refused, nothing configured", r)
    r = s.run("build")
    c.expect(r.returncode == 0 and (s.build / "build.ninja").is_file(), "./tutorial build configures", r)
    c.expect((s.repo / "subprojects" / "ch").is_symlink(), "./tutorial build links the chapter into subprojects/")
    before = s.saved_options()
    for bad, why in (("-Dgpu_arch=banana", "not 'banana'"), ("-Dcuda_arch=80", "not an option of this project"),
                     ("-Dexercises=banana", "banana")):
        r = s.run(bad, "build")
        c.expect(r.returncode != 0 and why in r.stderr + r.stdout and s.saved_options() == before,
                 f"{bad} on an existing build: refused, the build's options unchanged", r)
        r = s.run("build")
        c.expect(r.returncode == 0, f"after {bad}, plain ./tutorial build still works", r)
    r = s.run("-Dexercises=true", "build")
    c.expect(r.returncode == 0 and "exercises = true" in s.saved_options(), "a valid -D option reaches the build", r)


def check_broken_build(s, c):
    # meson configure stores any string: the state the tutorial used to leave behind.
    r = s.meson("configure", "build", "-Dgpu_arch=banana")
    c.expect(r.returncode == 0, "(set-up) meson configure stores gpu_arch=banana", r)
    r = s.run("build")
    advice = last_line(r.stderr)
    c.expect(r.returncode == 1 and "rm -rf build && ./tutorial -Dexercises=true build" in advice
             and "banana" not in advice, "a broken build: one line says how to start it afresh", r)
    command = advice.split("start it afresh: ", 1)[-1]
    r = subprocess.run(["bash", "-c", command.replace("./tutorial", "bash ./tutorial")], cwd=s.repo, env=s.env,
                       capture_output=True, text=True, timeout=300)
    c.expect(r.returncode == 0 and "exercises = true" in s.saved_options(), "following that line repairs it", r)


def check_tests(s, c):
    large_ran = s.build / "large-ran"
    r = s.run("test")
    c.expect(r.returncode == 0 and last_line(r.stdout) == "1 passed, 0 failed, 2 skipped" and not large_ran.exists(),
             "./tutorial test: the summary line, the large suite left out", r)
    reasons = r.stdout
    c.expect(re.search(r"ch:gpu +no CUDA device$", reasons, re.M) is not None,
             "a skipped doctest executable is listed with 'no CUDA device'", r)
    c.expect(re.search(r"ch:sanitizer +compute-sanitizer not found: skipping$", reasons, re.M) is not None,
             "a skipped test is listed with the reason it printed", r)

    r = s.run("test", "--suite", "doesnotexist")
    c.expect(r.returncode != 0 and "--suite doesnotexist: no such suite" in r.stderr and "passed" not in r.stdout,
             "--suite doesnotexist: an error, and no summary of the earlier run", r)
    r = s.run("test", "--no-suite=ch:nothing")
    c.expect(r.returncode != 0 and "no such suite" in r.stderr, "--no-suite=ch:nothing: an error", r)
    r = s.run("test", "--suite", "cpu", "--no-suite", "cpu")
    c.expect(r.returncode != 0 and "no test ran" in r.stderr and last_line(r.stdout) == "0 passed, 0 failed, 0 skipped",
             "a run in which no test ran fails, and counts nothing", r)

    r = s.run("test", "--list")
    c.expect(r.returncode == 0 and "passes" in r.stdout and "gpu_large" not in r.stdout and "no test ran" not in r.stderr,
             "./tutorial test --list lists the tests a plain run would run, and is not an error", r)
    for suite in ("ch", "ch:gpu", "gpu"):
        r = s.run("test", "--suite", suite)
        c.expect(r.returncode == 0 and not large_ran.exists(), f"--suite {suite}: the large suite left out", r)
    for suite in ("large", "ch:large"):
        r = s.run("test", "--suite", suite)
        c.expect(r.returncode == 0 and large_ran.exists() and last_line(r.stdout) == "1 passed, 0 failed, 0 skipped",
                 f"--suite {suite}: the large suite runs", r)
        large_ran.unlink(missing_ok=True)
    r = s.run("test", "--suite=ch", "--suite=large")
    c.expect(r.returncode == 0 and large_ran.exists(), "--suite=ch --suite=large: the large suite runs too", r)


def main():
    missing = [tool for tool in ("meson", "ninja") if not shutil.which(tool)]
    if missing:
        print(f"{' and '.join(missing)} not on PATH (./tutorial test puts them there): skipping")
        return SKIP
    c = Checks()
    check_gpu_arch(c)
    top = Path(tempfile.mkdtemp(prefix="tutorial-stand-in-"))
    try:
        s = StandIn(top)
        check_arguments(s, c)
        check_options(s, c)
        check_tests(s, c)
        check_broken_build(s, c)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print(f"{c.failed} check(s) failed" if c.failed else "every check passed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
