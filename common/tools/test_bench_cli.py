#!/usr/bin/env python3
"""A chapter's benchmark refuses bad options with a clear message before it looks for a GPU, and
lists its problems, parameters and cases with their floors.

  test_bench_cli.py BENCH       (a CPU test of every chapter)
"""
import json
import subprocess
import sys


def run(bench, *args):
    p = subprocess.run([bench, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    bench = sys.argv[1]
    errors = []

    def expect(args, rc, text):
        got_rc, out = run(bench, *args)
        if got_rc != rc or text not in out:
            errors.append(f"{' '.join(args)}: exit {got_rc} (want {rc}), output {out.strip()[-300:]!r} (want {text!r})")

    rc, out = run(bench, "--list-json")
    listing = json.loads(out) if rc == 0 else []
    if rc != 0 or not listing:
        errors.append(f"--list-json: exit {rc}")
    for p in listing:
        for c in [p["default_case"]] + p["suite"]:
            if not {"name", "shape", "params", "floor"} <= set(c) or c["floor"]["bytes"] <= 0:
                errors.append(f"--list-json: {p['problem']} case {c.get('name')} lacks a shape, parameters or floor")
        if {s["key"] for s in p["params"]} != set(p["default_case"]["params"]):
            errors.append(f"--list-json: {p['problem']}'s default case does not carry every declared parameter")
    expect(["--list"], 0, "default case:")
    expect(["--param", "nosuch=1"], 2, "no selected problem has a parameter 'nosuch'")
    expect(["--param", "novalue"], 2, "--param takes key=value")
    expect(["--problem", "nosuch"], 2, "no problem 'nosuch'")
    expect(["--version", "nosuch"], 2, "no version 'nosuch'")
    expect(["--case", "nosuch"], 2, "no case 'nosuch'")
    if listing:  # --case, --problem and --version are repeatable: a real name first does not hide a wrong second one
        expect(["--case", listing[0]["default_case"]["name"], "--case", "nosuch"], 2, "no case 'nosuch'")
        expect(["--problem", listing[0]["problem"], "--problem", "nosuch"], 2, "no problem 'nosuch'")
        first = listing[0]["versions"][0]["name"] if listing[0].get("versions") else None
        if first:
            expect(["--problem", listing[0]["problem"], "--version", first, "--version", "nosuch"], 2, "no version 'nosuch'")
            # a version of an unselected problem is not one of the selected problems'
            others = [p for p in listing[1:] if first not in {v["name"] for v in p.get("versions", [])}]
            if others:
                expect(["--problem", others[0]["problem"], "--version", first], 2, f"no version '{first}'")
        # A case named by part of its name (the shape, without every parameter) is refused with the
        # suite's names that hold each word given.
        names = {c["name"] for p in listing for c in [p["default_case"]] + p["suite"]}
        partial = next((" ".join(c["name"].split()[:-1]) for p in listing for c in p["suite"]
                        if len(c["name"].split()) > 1 and " ".join(c["name"].split()[:-1]) not in names), None)
        if partial:
            expect(["--case", partial], 2, f"no case '{partial}' in the selected problems' suites; did you mean '")
    expect(["--json", "/dev/null/x.json"], 2, "--json: cannot")
    expect(["--results-dir", "/dev/null/results"], 2, "--results-dir: cannot")
    expect(["--reps", "0"], 2, "not in [1, 100000]")
    expect(["--versus-rounds", "-1"], 2, "not in [0, 1000]")
    flat = listing and all(len(p["default_case"]["shape"]) == 1 for p in listing)
    if flat:
        expect(["--n", "-5"], 2, "is negative")
        expect(["--n", "1e99"], 2, "is not a whole number")
        expect(["--n", "0x10"], 2, "takes one number")
        expect(["--n", "0"], 2, "n must be in [1, 2^36]")
    # Every declared parameter: its default is accepted, and a value of the wrong type is named.
    for p in listing:
        for s in p["params"]:
            default = s["default"]
            text = "x".join(map(str, default)) if isinstance(default, list) else str(default)
            rc, out = run(bench, "--problem", p["problem"], "--param", f"{s['key']}={text}", "--version", "nosuch")
            if "no version 'nosuch'" not in out:
                errors.append(f"--param {s['key']}={text} on {p['problem']}: not accepted: {out.strip()[-200:]}")
            if not isinstance(default, str):
                expect(["--problem", p["problem"], "--param", f"{s['key']}=banana"], 2, f"parameter '{s['key']}': 'banana'")
    for e in errors:
        print("error: " + e)
    print(f"{bench}: {'options checked' if not errors else 'FAILED'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
