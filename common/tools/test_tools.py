#!/usr/bin/env python3
"""The Python tools answer bad input with one line that names the file or argument, never a
traceback, and refuse nonsense: a CPU test.

  test_tools.py
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(tool, *args):
    p = subprocess.run([sys.executable, os.path.join(HERE, tool), *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def merge_checks(tmp, expect, errors):
    """results.py --merge: one build's parts merge, each run keeps its own process's ceiling; parts
    of two builds, or a problem run twice, are refused with the file and the reason."""
    with open(os.path.join(HERE, "..", "..", "01_elementwise", "results", "NVIDIA_H200.json")) as f:
        real = json.load(f)  # a committed file, so that the parts follow the whole schema

    def part(name, problems, gbps, **over):
        doc = dict(real, runs=[dict(r, problem=q) for q in problems for r in real["runs"][:1]],
                   copy_ceiling=dict(real["copy_ceiling"], GBps=gbps), **over)
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return path
    a, b = part("A", ["p32", "q32"], 4245), part("B", ["p16"], 4233)
    twice, other = part("C", ["q32"], 4200), part("D", ["r16"], 4200, commit="def")
    out = os.path.join(tmp, "GPU.json")
    expect("results.py", ["--merge", out, a], (2,), "at least two")
    expect("results.py", ["--merge", out, a, twice], (2,), "q32 was run in A.json too")
    expect("results.py", ["--merge", out, a, other], (2,), "D.json: commit is 'def'")
    rc, text = run("results.py", "--merge", out, a, b)
    if rc != 0:  # without fastjsonschema the toy documents still load: only the fields read are checked
        errors.append(f"results.py --merge of two parts: exit {rc}, {text.strip()[-300:]!r}")
        return
    sys.path.insert(0, HERE)
    import results  # noqa: E402
    doc = results.load(out, "bench")
    got = [results.ceiling_of(doc, q)["GBps"] for q in ("p32", "q32", "p16")]
    if [r["problem"] for r in doc["runs"]] != ["p32", "q32", "p16"] or got != [4245, 4245, 4233]:
        errors.append(f"the merged runs or their ceilings are wrong: {[r['problem'] for r in doc['runs']]}, {got}")
    expect("results.py", ["--merge", os.path.join(tmp, "again.json"), out, twice], (2,), "q32 was run in GPU.json too")


def fold_checks(errors):
    """results_table.py folds a problem of several cases into one <details> block, and leaves a
    problem of one case open."""
    sys.path.insert(0, HERE)
    import results_table  # noqa: E402
    with open(os.path.join(HERE, "..", "..", "01_elementwise", "results", "NVIDIA_H200.json")) as f:
        real = json.load(f)
    one = real["runs"][0]
    runs = [dict(one, problem="p32", case="n=1"), dict(one, problem="p32", case="n=2"),
            dict(one, problem="q32", case="n=3"), dict(one, problem="p32", case="n=1", version="other")]
    text = results_table.bench_tables(dict(real, runs=runs, _file="GPU.json"))
    opened, closed = text.count("<details>"), text.count("</details>")
    if opened != 1 or closed != 1 or "<code>p32</code>" not in text or "<code>q32</code>" in text:
        errors.append(f"results_table.bench_tables folds wrongly: {opened} opened, {closed} closed")
    elif not text.index("<details>") < text.index("n=1") < text.index("n=2") < text.index("</details>") \
            < text.index("n=3"):
        errors.append("results_table.bench_tables: p32's two cases are not inside its <details>, or q32's is")


def ours_checks(errors):
    """torch_peers.py's OURS: one version for every case, or one per case of CASES; a case OURS has
    no version for is an error that names it."""
    sys.path.insert(0, HERE)
    import torch_peers  # noqa: E402  (no torch needed to import it)
    spec = torch_peers.Spec.__new__(torch_peers.Spec)
    spec.cases = {"p": ["a", "b"]}
    spec.ours = {"p": {"a": "v2", "b": "v1"}, "q": "v0"}
    if spec.ours_for("p", "b") != "v1" or spec.ours_for("q", "anything") != "v0" or spec.ours_for("r", "a") is not None:
        errors.append("Spec.ours_for picks the wrong version")
    if spec.ours_versions("p") != ["v1", "v2"] or spec.ours_versions("q") != ["v0"] or spec.ours_versions("r") != []:
        errors.append(f"Spec.ours_versions: {spec.ours_versions('p')}, {spec.ours_versions('q')}")
    try:
        spec.ours_for("p", "c")
        errors.append("Spec.ours_for gave a version for a case OURS does not list")
    except torch_peers.Failure as e:
        if "'c'" not in str(e):
            errors.append(f"Spec.ours_for's error does not name the case: {e}")


def main():
    errors = []

    def expect(tool, args, rcs, text):
        rc, out = run(tool, *args)
        if rc not in rcs or text not in out or "Traceback" in out:
            errors.append(f"{tool} {' '.join(args)}: exit {rc}, output {out.strip()[-300:]!r}; wanted {text!r}")

    with tempfile.TemporaryDirectory() as tmp:
        corrupt, listed, wrong = (os.path.join(tmp, n) for n in ("corrupt", "listed", "wrong"))
        for d in (corrupt, listed, wrong):
            os.makedirs(d)
        with open(os.path.join(corrupt, "GPU.json"), "w") as f:
            f.write("{ not json")
        with open(os.path.join(listed, "GPU.json"), "w") as f:
            json.dump([1, 2], f)
        with open(os.path.join(wrong, "GPU.sweep.json"), "w") as f:
            json.dump({"schema_version": 3, "runs": "no"}, f)
        expect("results_table.py", ["--check", os.path.join(tmp, "missing")], (2,), "no README.md there")
        expect("results_table.py", ["summary", os.path.join(tmp, "missing")], (2,), "no such folder")
        expect("results.py", ["--validate", corrupt], (1, 77), "GPU.json")
        if run("results.py", "--validate", corrupt)[0] == 1:
            expect("results.py", ["--validate", corrupt], (1,), "not valid JSON")
            expect("results.py", ["--validate", listed], (1,), "holds a list")
        expect("sweep.py", ["--plot-only", os.path.join(tmp, "missing.json")], (2,), "no such file")
        expect("sweep.py", ["--plot-only", os.path.join(corrupt, "GPU.json")], (2,), "not valid JSON")
        expect("sweep.py", ["--plot-only", os.path.join(listed, "GPU.json")], (2,), "holds a list")
        expect("sweep.py", ["--plot-only", os.path.join(wrong, "GPU.sweep.json")], (2,), "GPU.sweep.json")
        expect("sweep.py", ["--build", os.path.join(tmp, "nobuild")], (2,), "no such build folder")
        expect("torch_peers.py", ["--check-race", "01_elementwise", os.path.join(tmp, "none.so")], (2,),
               "no race module there")
        expect("torch_peers.py", ["--check-race", "nosuch", os.path.join(tmp, "none.so")], (2,), "no chapter 'nosuch'")
        expect("torch_peers.py", ["--problem", "nosuch", "01_elementwise"], (2,), "no PyTorch peer of a problem 'nosuch'")
        expect("torch_peers.py", ["--json", os.path.join(tmp, "t.json"), "01_elementwise", "04_relu_mask"], (2,),
               "name exactly one chapter")
        expect("torch_peers.py", ["--profile", "01_elementwise", "p", "n", "--case", "a", "--case", "b"], (2,),
               "give --case once")
        expect("profile.py", ["--build", os.path.join(tmp, "nobuild")], (2,), "not built")
        expect("profile.py", ["nosuch"], (2,), "no chapter 'nosuch'")
        expect("migrate_results.py", [os.path.join(tmp, "missing")], (2,), "no such folder")
        merge_checks(tmp, expect, errors)
    sys.path.insert(0, HERE)
    import sweep  # noqa: E402

    fold_checks(errors)
    ours_checks(errors)
    for name, png in (("a/NVIDIA_H100.sweep.json", "a/NVIDIA_H100.sweep.png"), ("sweepdata", "sweepdata.png")):
        if sweep.png_path(name) != png:
            errors.append(f"sweep.png_path({name!r}) is {sweep.png_path(name)!r}, not {png!r}")
    for e in errors:
        print("error: " + e)
    print("the tools' errors are one line each" if not errors else f"{len(errors)} failures")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
