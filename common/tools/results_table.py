#!/usr/bin/env python3
"""Generate the results tables in the READMEs from the benchmarks' JSON.

Every chapter README holds its tables between
    <!-- results:begin -->  and  <!-- results:end -->
and the root README holds the chapter list between
    <!-- chapters:begin -->  and  <!-- chapters:end -->
Nothing between the markers is written by hand: run

    python3 common/tools/results_table.py --update            # rewrite every README
    python3 common/tools/results_table.py --check CHAPTER_DIR # fail if one is stale (a test)
"""
import argparse
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
CHAPTERS = [
    ("01_elementwise", "Element-wise kernels: grid sizing, grid-stride loops, a generic vectorized template"),
    ("02_vectorized_access", "16-byte loads, what the compiler really emits, and alignment"),
    ("03_prefix_sum", "Block-wise prefix sum: shared memory, warp shuffles, coarsening"),
    ("04_relu_mask", "ReLU with a bitmask: per-thread bytes versus warp ballots"),
    ("05_bn_fusion", "Batch-norm fusion: BN+ReLU and BN+Add+ReLU in one pass"),
    ("06_maxpool3d", "MaxPool3D, versions 1-5"),
    ("07_roofline", "The roofline: every chapter's kernels against the machine's ceilings"),
]


def load_results(chapter_dir):
    out = []
    for path in sorted(glob.glob(os.path.join(chapter_dir, "results", "*.json"))):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        doc["_file"] = os.path.relpath(path, chapter_dir)
        out.append(doc)
    return out


def ms(run):
    return f"{run['ms_median']:.4f} [{run['ms_min']:.4f}–{run['ms_max']:.4f}]"


def chapter_tables(results):
    if not results:
        return "_No results yet: run this chapter's benchmark on a GPU (see the root README)._\n"
    parts = []
    for doc in results:
        parts.append(
            f"**{doc['gpu']}** (`{doc['_file']}`, commit `{doc['commit']}`, {doc.get('date', '?')}): "
            f"copy ceiling measured in the same run **{doc['copy_ceiling_GBps']:.1f} GB/s**.\n")
        problems = []
        for run in doc["runs"]:
            if run["problem"] not in problems:
                problems.append(run["problem"])
        for problem in problems:
            runs = [r for r in doc["runs"] if r["problem"] == problem]
            floor_ms = runs[0]["bytes"] / (doc["copy_ceiling_GBps"] * 1e9) * 1e3
            parts.append(f"\n`{problem}`, {runs[0]['size']}: {runs[0]['bytes'] / 1e9:.3f} GB moved at least, "
                         f"{floor_ms:.4f} ms at the copy ceiling.\n\n")
            parts.append("| version | ms median [min–max] | GB/s | of copy | vs first | regs | check |\n")
            parts.append("|---|---|---:|---:|---:|---:|---|\n")
            for r in runs:
                regs = "–" if r.get("regs") is None else str(r["regs"])
                parts.append(f"| `{r['version']}` | {ms(r)} | {r['GBps']:.1f} | {r['fraction_of_copy']:.3f} | "
                             f"{r.get('speedup_vs_first', 0):.2f}× | {regs} | {r['check']} |\n")
        parts.append("\n")
    return "".join(parts).rstrip() + "\n"


def headline(chapter_dir):
    """Each problem's best checked version; library peers (rows without a register count, i.e.
    library calls such as cudaMemcpyAsync or CUB) are quoted beside it, not chosen."""
    results = load_results(chapter_dir)
    if not results:
        return "not yet run"
    cells = []
    for doc in results:
        best, peers = {}, {}
        for r in doc["runs"]:
            if r["check"] != "pass":
                continue
            table = peers if r.get("regs") is None else best
            if r["problem"] not in table or r["fraction_of_copy"] > table[r["problem"]]["fraction_of_copy"]:
                table[r["problem"]] = r
        items = []
        for p, r in best.items():
            item = f"`{p}` {r['fraction_of_copy']:.2f} of copy (`{r['version']}`"
            if p in peers:
                item += f"; peer `{peers[p]['version']}` {peers[p]['fraction_of_copy']:.2f}"
            items.append(item + ")")
        cells.append(f"{doc['gpu']}: " + ", ".join(items))
    return "; ".join(cells)


def chapters_table():
    rows = ["| chapter | what it teaches | headline result (fraction of the measured copy ceiling) |\n",
            "|---|---|---|\n"]
    for name, blurb in CHAPTERS:
        d = os.path.join(ROOT, name)
        if os.path.isdir(d):
            rows.append(f"| [{name}]({name}/README.md) | {blurb} | {headline(d)} |\n")
        else:
            rows.append(f"| {name} | {blurb} | not written yet |\n")
    return "".join(rows)


def replace_between(text, tag, body, path):
    begin, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{path}: markers {begin} / {end} not found")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}{end}{tail}"


def targets():
    out = []
    for name, _ in CHAPTERS:
        d = os.path.join(ROOT, name)
        if os.path.isfile(os.path.join(d, "README.md")):
            out.append((os.path.join(d, "README.md"), "results", lambda d=d: chapter_tables(load_results(d))))
    out.append((os.path.join(ROOT, "README.md"), "chapters", chapters_table))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", action="store_true", help="rewrite every README's generated part")
    ap.add_argument("--check", metavar="DIR", help="exit 1 if DIR/README.md (or the root README) is stale")
    args = ap.parse_args()
    stale = []
    for path, tag, make in targets():
        if args.check and os.path.abspath(os.path.dirname(path)) not in (os.path.abspath(args.check), ROOT):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new = replace_between(text, tag, make(), path)
        if new != text:
            if args.update:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
                print(f"updated {os.path.relpath(path, ROOT)}")
            else:
                stale.append(os.path.relpath(path, ROOT))
    if stale:
        print("stale generated tables in: " + ", ".join(stale))
        print("run: python3 common/tools/results_table.py --update")
        return 1
    if args.check:
        print("generated tables are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
