#!/usr/bin/env python3
"""The tables in the READMEs, generated from the committed results; and the maintainer's publish.

Every chapter README holds generated sections between markers, filled from its results/ folder:
    <!-- results:begin --> ... <!-- results:end -->   each GPU's timings (NN/results/<gpu>.json), with
                                                      the PyTorch rows (<gpu>.torch.json) beside them;
                                                      a problem of several cases folded in <details>
    <!-- profile:begin --> ... <!-- profile:end -->   each GPU's Nsight Compute numbers (<gpu>.profile.json)
    <!-- ceiling:begin --> ... <!-- ceiling:end -->   each GPU's copy-ceiling candidates
    <!-- sweep:begin --> ... <!-- sweep:end -->       the size-sweep plots (<gpu>.sweep.png)
and the root README holds the chapter list between <!-- chapters:begin --> and <!-- chapters:end -->.
Nothing between markers is written by hand. A lesson that quotes a tool's text output instead puts
    <!-- quote: results/FILE -->
on the line before the fenced block, and --check proves every line of the block is a line of that
file, in the file's order ("..." stands for lines left out): a rerun that changes the file makes
the quote fail until the lesson follows it.

  results_table.py --check DIR      exit 1 if DIR/README.md (or the root README) is stale (a test)
  results_table.py --update         rewrite every README's generated sections
  results_table.py summary RESULTS  print the tables of a user's run (BUILD/results), and write
                                    RESULTS/summary.md; touches nothing in the repository
  results_table.py publish RESULTS  copy RESULTS/CH/* into CH/results/ (refusing results of a build
                                    with the exercises registered), then --update
"""
import argparse
import glob
import itertools
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chapters  # noqa: E402
import figures  # noqa: E402
import results  # noqa: E402

ROOT = chapters.ROOT


# ---- loading: through results.py ------------------------------------------------------------------

def results_in(folder):
    """{gpu slug: {"bench": doc, "torch": doc, "profile": doc, "sweep": doc, "sweep_png": name}}."""
    return results.folder(folder)


# ---- formatting ----------------------------------------------------------------------------------

def f(v, fmt="{:.1f}", none="–"):
    return none if v is None else fmt.format(v)


def param_text(v):
    """A parameter as a case's name writes it: 3x3x3 for a list."""
    return "x".join(str(x) for x in v) if isinstance(v, list) else str(v)


def ms(r):
    return f"{r['ms_median']:.4f} [{r['ms_min']:.4f}–{r['ms_max']:.4f}]"


def regs(r):
    per = r.get("regs_per_kernel") or []
    return "–" if not per else "/".join(str(x) for x in per)


def ordered(items, key):
    seen = []
    for it in items:
        if key(it) not in seen:
            seen.append(key(it))
    return seen


def problems_text(process):
    """A merged file's process (results.py --merge) by the problems it ran."""
    return ", ".join(f"`{q}`" for q in process["problems"])


def ceiling_line(doc):
    c = doc["copy_ceiling"]
    if doc.get("processes"):  # a merged file (results.py --merge): each process measured its own
        return (f"merged from {len(doc['processes'])} processes of this build, each with the copy ceiling "
                "measured in it: " + "; ".join(f"{problems_text(p)} ({p['date']}): **{p['copy_ceiling']['GBps']:.1f} "
                                               f"GB/s** ({p['copy_ceiling']['winner']})" for p in doc["processes"]))
    own = f"; best own copy {c['best_own_GBps']:.1f} GB/s = {c['best_own_GBps'] / c['GBps']:.3f} of it" \
        if c.get("best_own") else ""
    return (f"copy ceiling measured in the same run **{c['GBps']:.1f} GB/s** ({c['winner']}{own}); "
            f"read-only stream {c['read_only_GBps']:.1f} GB/s, write-only {c['write_only_GBps']:.1f} GB/s")


def race_line(peer):
    """One sentence for a peer that raced our version in its own process (torch_peers.py)."""
    r = peer["race"]
    if "speed_ratio" not in r:
        return f"In one process, `{r['version']}` did not race `{peer['version']}`: {r['check']}.\n"
    spin = f", each after a spin of {r['busy_cycles']:,} cycles" if "busy_cycles" in r else ""
    return (f"In one process, alternating {r['rounds']} rounds of {r['reps_per_round']} launches{spin}: `{r['version']}` "
            f"ran at **{r['speed_ratio']:.3f}×** the speed of `{peer['version']}` (rounds {r['speed_ratio_min']:.3f}–"
            f"{r['speed_ratio_max']:.3f}; medians {r['ms_median']:.4f} ms against {r['peer_ms_median']:.4f} ms; "
            f"check {r['check']}).\n")


def case_table(doc, torch_doc, problem, case):
    """One case's table: every version's row, PyTorch's rows, and each race's line."""
    runs = [r for r in doc["runs"] if r["problem"] == problem and r["case"] == case]
    h = runs[0]
    floor_ms = h["bytes"] / (results.ceiling_of(doc, problem)["GBps"] * 1e9) * 1e3
    params = "".join(f", {k}={param_text(v)}" for k, v in h.get("params", {}).items()
                     if f"{k}={param_text(v)}" not in case)
    parts = [f"\n`{problem}` [{h['dtype']}], {case}{params}: {h['bytes'] / 1e9:.3f} GB moved at least, "
             f"{floor_ms:.4f} ms at the copy ceiling.\n\n",
             "| version | kind | ms median [min–max] | GB/s | of copy | vs first | regs | check |\n",
             "|---|---|---|---:|---:|---:|---:|---|\n"]
    for r in runs:
        kind = r["kind"] + (f" ({r['library']})" if r.get("library") else "")
        if r["check"] == "unsupported":  # a library that refused the case: nothing was timed
            parts.append(f"| `{r['version']}` | {kind} | unsupported: {r.get('check_detail', '')} | | | | | |\n")
            continue
        parts.append(f"| `{r['version']}` | {kind} | {ms(r)} | {r['GBps']:.1f} | {r['fraction_of_copy']:.3f} | "
                     f"{r['speedup_vs_first']:.2f}× | {regs(r)} | {r['check']} |\n")
    raced = []
    for p in (torch_doc or {}).get("runs", []):
        if p["problem"] == problem and p["case"] == case:
            parts.append(f"| `{p['version']}` | peer (torch {torch_doc['torch']}) | {ms(p)} | {p['GBps']:.1f} | "
                         f"{p['fraction_of_copy']:.3f}\\* | – | – | {p['check']} |\n")
            if p.get("race"):
                raced.append(race_line(p))
    if raced:
        parts.append("\n" + "\n".join(raced))
    return "".join(parts)


def bench_tables(doc, torch_doc=None, prefix="results/"):
    parts = [f"**{doc['gpu']}** (`{prefix}{doc['_file']}`, commit `{doc['commit']}`, {doc['date']}): "
             f"{ceiling_line(doc)}.\n"]
    pairs = ordered(doc["runs"], lambda r: (r["problem"], r["case"]))
    for problem, group in itertools.groupby(pairs, key=lambda pc: pc[0]):
        cases = [case for _, case in group]
        fold = len(cases) > 1  # a problem of several cases folded, so that a long lesson stays readable
        if fold:
            parts.append(f"\n<details><summary><code>{problem}</code> on the {doc['gpu']}: {len(cases)} cases, "
                         "every version's times</summary>\n")
        parts += [case_table(doc, torch_doc, problem, case) for case in cases]
        if fold:
            parts.append("\n</details>\n")
    if (torch_doc or {}).get("runs"):
        parts.append(f"\n\\* PyTorch's rows come from a separate process (`{prefix}{torch_doc['_file']}`, "
                     f"{torch_doc['date']}; the rows above: {doc['date']}), against the copy ceiling measured there: "
                     f"{torch_doc['copy_ceiling']['GBps']:.1f} GB/s ({torch_doc['copy_ceiling']['winner']}).\n")
    return "".join(parts)


def profile_tables(doc, prefix="results/"):
    m = doc["machine"]
    parts = [f"**{doc['gpu']}** (`{prefix}{doc['_file']}`, {doc['ncu']}, {doc['date']}): a load that misses the "
             f"caches takes {m['dram_latency_ns']:.0f} ns unloaded; at the copy ceiling of "
             f"{m['copy_ceiling']['GBps']:.0f} GB/s, Little's law asks for at least "
             f"{m['bytes_in_flight_needed'] / 1e6:.2f} MB in flight, "
             f"{m['bytes_in_flight_needed_per_sm'] / 1024:.1f} KiB per SM.\n"]
    # One table per problem and case: the versions run on the problem's default case, and a peer
    # profiled on several cases (PyTorch's on the suite's shapes) gets a table for each of the others.
    for problem, case in ordered(doc["runs"], lambda r: (r["problem"], r["case"])):
        runs = [r for r in doc["runs"] if r["problem"] == problem and r["case"] == case]
        parts.append(f"\n`{problem}`, {case}:\n\n")
        parts.append("| version | kernel grid × block | DRAM % of peak | achieved occupancy | sectors/request (ld, st) | "
                     "LSU pipe % | SM balance | in flight: B/thread, KiB/SM (needs) | top stalls (% of active cycles) |\n")
        parts.append("|---|---|---:|---:|---:|---:|---:|---:|---|\n")
        for r in runs:
            if not r["kernels"]:
                parts.append(f"| `{r['version']}` | no kernel ncu can see | | | | | | | |\n")
            for k in r["kernels"]:
                stalls = ", ".join(f"{s['reason']} {s['pct']:.0f}" for s in k["stalls"])
                inflight = (f"{k['load_bytes_in_flight_per_thread']}, {k['bytes_in_flight_per_sm'] / 1024:.1f} "
                            f"({k['bytes_in_flight_needed_per_sm'] / 1024:.1f})"
                            if k.get("bytes_in_flight_per_sm") is not None else "–")
                parts.append(
                    f"| `{r['version']}` | {f(k['grid'], '{:.0f}')} × {f(k['block'], '{:.0f}')} | {f(k['dram_pct'])} | "
                    f"{f(k['achieved_occupancy_pct'])} | {f(k['sectors_per_request_ld'], '{:.1f}')}, "
                    f"{f(k['sectors_per_request_st'], '{:.1f}')} | {f(k['lsu_pipe_pct'])} | "
                    f"{f(k['sm_balance'], '{:.3f}')} | {inflight} | {stalls} |\n")
    return "".join(parts)


def ceiling_tables(doc, prefix="results/"):
    blocks = []
    for p in doc.get("processes") or [{"copy_ceiling": doc["copy_ceiling"]}]:
        c = p["copy_ceiling"]
        which = f", the process of {problems_text(p)}" if "problems" in p else ""
        rows = [f"**{doc['gpu']}** (`{prefix}{doc['_file']}`{which}: {c['bytes'] / 2**20:.0f} MiB read and written "
                f"per copy, the median of repetitions interleaved in rounds):\n\n",
                "| copy | GB/s | of the best |\n|---|---:|---:|\n"]
        for k in c["candidates"]:
            name = k["shape"] + ("" if k["own"] else " (the driver)")
            rows.append(f"| {name} | {k['GBps']:.1f} | {k['GBps'] / c['GBps']:.3f} |\n")
        blocks.append("".join(rows))
    return "\n".join(blocks)


def chapter_sections(folder, prefix="results/"):
    res = results_in(folder)
    empty = "_No results yet: run `./tutorial bench` on a GPU, then `./tutorial publish`._\n"
    sections = {"results": [], "profile": [], "ceiling": [], "sweep": []}
    for slug in sorted(res):
        r = res[slug]
        if "bench" in r:
            sections["results"].append(bench_tables(r["bench"], r.get("torch"), prefix))
            sections["ceiling"].append(ceiling_tables(r["bench"], prefix))
        if "profile" in r:
            sections["profile"].append(profile_tables(r["profile"], prefix))
        if "sweep_png" in r:
            gpu = r.get("sweep", {}).get("gpu", slug)
            sections["sweep"].append(f"![fraction of copy against n on {gpu}]({prefix}{r['sweep_png']})\n")
    return {k: "\n".join(v).rstrip() + "\n" if v else empty for k, v in sections.items()}


# ---- the root README's chapter list --------------------------------------------------------------

def short_gpu(name):
    """'NVIDIA H100 80GB HBM3' -> 'H100': the column heading of the front page."""
    words = name.replace("NVIDIA ", "").split()
    return words[0] if words else name


def speed_text(ratio, peer):
    """Our speed over the peer's, spelled with its direction."""
    digits = 3 if abs(ratio - 1) < 0.05 else 2
    if ratio >= 1:
        return f"{ratio:.{digits}f}× faster than `{peer}`"
    return f"{ratio:.{digits}f}×, slower than `{peer}`"


def headline_cells(docs, problem):
    """(best version, its fraction of copy, [comparisons]) for `problem`'s default case on one GPU."""
    bench = docs.get("bench")
    if bench is None:
        return None
    runs = [r for r in bench["runs"] if r["problem"] == problem and r["check"] == "pass"]
    if not runs:
        return None
    case = runs[0]["case"]  # the default case: the benchmark runs it first
    runs = [r for r in runs if r["case"] == case]
    own = [r for r in runs if r["kind"] == "own"]
    if not own:
        return None
    best = max(own, key=lambda r: r["GBps"])
    says = []
    for peer in (r for r in runs if r["kind"] == "peer"):  # a library in the same run: CUB, the driver
        says.append(speed_text(peer["ms_median"] / best["ms_median"], peer["version"]))
    for peer in (docs.get("torch") or {}).get("runs", []):
        race = peer.get("race") or {}
        if peer["problem"] == problem and peer["case"] == case and "speed_ratio" in race:
            who = "" if race["version"] == best["version"] else f"`{race['version']}` "
            says.append(who + speed_text(race["speed_ratio"], peer["version"]))
    return best["version"], best["fraction_of_copy"], says


def chapters_table():
    """The front page: one row per chapter and headline problem (chapters.list's third field)."""
    table, gpus = [], []
    for c in chapters.all_chapters():
        res = results_in(os.path.join(c.path, "results")) if os.path.isdir(os.path.join(c.path, "results")) else {}
        for docs in res.values():
            if "bench" in docs and short_gpu(docs["bench"]["gpu"]) not in gpus:
                gpus.append(short_gpu(docs["bench"]["gpu"]))
        table.append((c, res))
    head = "| chapter | problem | best version | " + " | ".join(f"{g}: of copy" for g in gpus) + \
           " | against the library a user would call, timed in the same process |\n"
    rows = [head, "|---|---|---|" + "---:|" * len(gpus) + "---|\n"]
    for c, res in table:
        written = os.path.isfile(os.path.join(c.path, "README.md"))
        link = f"[{c.name}]({c.name}/README.md)" if written else c.name
        if not written or not c.headline:
            rows.append(f"| {link}: {c.blurb} | – | {'not written yet' if not written else '–'} |"
                        + " – |" * len(gpus) + " – |\n")
            continue
        for k, problem in enumerate(c.headline):
            cells = {short_gpu(d["bench"]["gpu"]): headline_cells(d, problem) for d in res.values() if "bench" in d}
            best = next((v[0] for v in cells.values() if v), "–")
            fractions = [f"{cells[g][1]:.2f}" if cells.get(g) else "–" for g in gpus]
            says = "; ".join(f"{g}: " + ", ".join(cells[g][2]) for g in gpus if cells.get(g) and cells[g][2]) or "–"
            name = f"{link}: {c.blurb}" if k == 0 else ""
            rows.append(f"| {name} | `{problem}` | `{best}` | " + " | ".join(fractions) + f" | {says} |\n")
    # Chapter 07's picture of every version on the roofline, per GPU it ran on.
    for path in sorted(glob.glob(os.path.join(ROOT, "07_roofline", "results", "*.roofline.png"))):
        rel = os.path.relpath(path, ROOT)
        gpu = os.path.basename(path).split(".")[0].replace("_", " ")
        rows.append(f"\nEvery version of every chapter on the roofline of the {gpu} (chapter 07):\n\n"
                    f"![every version of every chapter on the roofline of the {gpu}]({rel})\n")
    return "".join(rows)


# ---- README plumbing -----------------------------------------------------------------------------

replace_between = chapters.replace_between


def targets(only=None):
    out = []
    for c in chapters.existing():
        readme = os.path.join(c.path, "README.md")
        if os.path.isfile(readme) and (only is None or os.path.abspath(c.path) == os.path.abspath(only)):
            out.append((readme, lambda c=c: chapter_sections(os.path.join(c.path, "results"))))
    out.append((os.path.join(ROOT, "README.md"), lambda: {"chapters": chapters_table()}))
    return out


QUOTE = re.compile(r"^\s*<!-- quote: (\S+) -->\s*$")


def quote_errors(readme):
    """What is wrong with the README's quotes of result files (see the module's docstring)."""
    with open(readme, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    errors, where = [], os.path.relpath(readme, ROOT)
    for k, line in enumerate(lines):
        m = QUOTE.match(line)
        if not m:
            continue
        source = os.path.join(os.path.dirname(readme), m.group(1))
        if not os.path.isfile(source):
            errors.append(f"{where}:{k + 1}: quotes {m.group(1)}, which does not exist")
            continue
        if k + 1 >= len(lines) or not lines[k + 1].strip().startswith("```"):
            errors.append(f"{where}:{k + 1}: a quote marker must stand on the line before a fenced block")
            continue
        with open(source, encoding="utf-8") as fh:
            have = [x.rstrip() for x in fh.read().splitlines()]
        pos = 0
        for j in range(k + 2, len(lines)):
            text = lines[j].rstrip()
            if text.strip().startswith("```"):
                break
            if text.strip() in ("", "..."):
                continue
            try:
                pos = have.index(text, pos) + 1
            except ValueError:
                errors.append(f"{where}:{j + 1}: not a line of {m.group(1)} (after the lines quoted before it): {text}")
                break
    return errors


def regenerate(update, only=None):
    stale = []
    for path, make in targets(only):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        new = text
        for tag, body in make().items():
            new = replace_between(new, tag, body)
        if new != text:
            if update:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(new)
                print(f"updated {os.path.relpath(path, ROOT)}")
            else:
                stale.append(os.path.relpath(path, ROOT))
    return stale


# ---- a user's run: summary and publish ------------------------------------------------------------

def summary(results):
    parts = ["# Results of this run\n\nGenerated by `./tutorial bench` from the JSON beside this file; the "
             "committed results in each chapter's `results/` are untouched.\n"]
    found = False
    for c in chapters.existing():
        folder = os.path.join(results, c.name)
        if not os.path.isdir(folder):
            continue
        res = results_in(folder)
        for slug, r in sorted(res.items()):
            if "bench" in r:
                found = True
                parts.append(f"\n## {c.name}\n\n" + bench_tables(r["bench"], r.get("torch"), prefix=f"{c.name}/"))
    if not found:
        print("no benchmark results in " + results + " (no GPU here, or the benchmarks did not run)")
        return 0
    text = "".join(parts)
    print("\n" + text)
    path = os.path.join(results, "summary.md")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {path}")
    return 0


def publish(results):
    copied = 0
    for c in chapters.existing():
        folder = os.path.join(results, c.name)
        for path in sorted(glob.glob(os.path.join(folder, "*.json")) + glob.glob(os.path.join(folder, "*.png"))):
            name = os.path.basename(path)
            if name == "summary.md" or name.endswith(".tmp.json"):
                continue
            if name.endswith(".json"):
                doc = results.load(path)
                if doc.get("exercises") or any(r.get("kind") == "exercise" for r in doc.get("runs", [])):
                    print(f"skipped {path}: it comes from a build with the exercises registered")
                    continue
            os.makedirs(os.path.join(c.path, "results"), exist_ok=True)
            shutil.copyfile(path, os.path.join(c.path, "results", name))
            print(f"published {c.name}/results/{name}")
            copied += 1
    if not copied:
        print(f"nothing to publish in {results}")
    regenerate(update=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", action="store_true", help="rewrite every README's generated sections")
    ap.add_argument("--check", metavar="DIR", help="exit 1 if DIR/README.md (or the root README) is stale")
    ap.add_argument("action", nargs="?", choices=["summary", "publish"])
    ap.add_argument("results", nargs="?", help="a build's results folder (BUILD/results)")
    args = ap.parse_args()
    if args.action:
        if not args.results:
            ap.error(f"{args.action} needs the results folder")
        if not os.path.isdir(args.results):
            print(f"error: {args.results}: no such folder (a build's results folder, BUILD/results)")
            return 2
        return summary(args.results) if args.action == "summary" else publish(args.results)
    if args.check and not os.path.isfile(os.path.join(args.check, "README.md")):
        print(f"error: {args.check}: no README.md there (--check takes a chapter's folder)")
        return 2
    stale = regenerate(update=args.update, only=args.check)
    quotes = [e for readme, _ in targets(args.check) for e in quote_errors(readme) + figures.figure_errors(readme)]
    for e in quotes:
        print(e)
    if quotes:
        print("a lesson quotes or cites result files that say otherwise: update the quoted blocks and figures")
        return 1
    if stale:
        print("stale generated tables in: " + ", ".join(stale))
        print("run: ./tutorial publish (or python3 common/tools/results_table.py --update)")
        return 1
    if args.check:
        print("generated tables are up to date")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except results.ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
