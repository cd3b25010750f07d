#!/usr/bin/env python3
"""The results library: how every tool reads the chapters' results.

A chapter's results folder (NN_chapter/results/, or BUILD/results/NN_chapter/ for a user's run)
holds one file per GPU and kind; the schema, with every field explained, is results.schema.json
beside this file:

    <gpu>.json           bench    the benchmark
    <gpu>.sweep.json     sweep    the benchmark over each problem's suite, L2 warm
    <gpu>.torch.json     torch    PyTorch's operators, each raced against our version in one process
    <gpu>.profile.json   profile  Nsight Compute's counters per kernel
    <gpu>.ceilings.json  ceilings the machine's roofs, measured beside their theoretical values (07)
    <gpu>.sweep.png               the sweep's plot

  load(path)             one file, checked: a ResultsError names the file and what is wrong
  folder(path)           {gpu slug: {"bench": doc, "sweep": doc, "torch": doc, "profile": doc, "sweep_png": name}}
  rows(path)             every (gpu, problem, case, version) of a folder, its bench run joined with its
                         peer row, its race and its profiled kernels (Row)
  chapter_results()      {chapter: folder(...)} over chapters.list, for tools that read every chapter
  ceiling_of(doc, problem)  the copy ceiling that a bench run of `problem` divides by: the ceiling of
                         the process that timed it
  merge(docs)            one bench document from several processes of one build, each on other
                         problems (a suite split by --type or --problem, run one after the other or
                         on several GPUs of one model at once); each keeps its own copy ceiling
                         under "processes"

Validation against the schema uses fastjsonschema when it is importable (./tutorial installs it);
without it, load() checks the schema version and the fields the tools read.

  results.py --validate [FOLDER ...]   every results file of every chapter (or of each FOLDER)
                                       against the schema; exit 1 on the first file that fails,
                                       77 without fastjsonschema
  results.py --merge OUT IN IN ...     merge(IN ...) written to OUT; exit 2 with the reason when
                                       the files are not one build's disjoint parts
"""
import argparse
import glob
import json
import os
import sys
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chapters  # noqa: E402

SCHEMA_VERSION = 3
SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.schema.json")
KINDS = ("bench", "sweep", "torch", "profile", "ceilings")


class ResultsError(Exception):
    """A results file that cannot be used, with the file's name in the message."""


def kind_of(path):
    """The kind a file's name says: NAME.json -> bench, NAME.sweep.json -> sweep, ...; None for other files."""
    base = os.path.basename(path)
    if not base.endswith(".json"):
        return None
    _, _, rest = base[: -len(".json")].partition(".")
    kind = rest or "bench"
    return kind if kind in KINDS else None


_validators = {}


def _validator(kind):
    """A compiled schema check for `kind`, or None without fastjsonschema."""
    if kind in _validators:
        return _validators[kind]
    try:
        import fastjsonschema
    except ImportError:
        _validators[kind] = None
        return None
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        schema = json.load(f)
    definition = "bench" if kind == "sweep" else kind
    _validators[kind] = fastjsonschema.compile({"$ref": f"#/definitions/{definition}", "definitions": schema["definitions"]})
    return _validators[kind]


def have_full_validation():
    return _validator("bench") is not None


def load(path, kind=None):
    """The document in `path`, checked against the schema of its kind (from its name unless given)."""
    kind = kind or kind_of(path)
    if kind is None:
        raise ResultsError(f"{path}: not a results file (expected <gpu>.json, .sweep.json, .torch.json, .profile.json "
                           "or .ceilings.json)")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ResultsError(f"{path}: cannot be read ({e})") from None
    if not isinstance(doc, dict):
        raise ResultsError(f"{path}: a results file holds a JSON object, this one holds a {type(doc).__name__}")
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        hint = " (common/tools/migrate_results.py converts schema 2)" if version == 2 else ""
        raise ResultsError(f"{path}: schema_version {version}, expected {SCHEMA_VERSION}{hint}")
    check = _validator(kind)
    if check is not None:
        try:
            check(doc)
        except Exception as e:  # fastjsonschema.JsonSchemaException: its message names the field
            raise ResultsError(f"{path}: does not follow results.schema.json ({kind}): {e}") from None
    elif kind != "ceilings" and (not isinstance(doc.get("runs"), list) or any(not isinstance(r, dict) for r in doc["runs"])):
        raise ResultsError(f"{path}: 'runs' must be a list of objects")
    doc["_file"] = os.path.basename(path)
    doc["_kind"] = kind
    return doc


def folder(path):
    """{gpu slug: {kind: doc, "sweep_png": file name}} for every results file in `path`."""
    if not os.path.isdir(path):
        raise ResultsError(f"{path}: no such folder")
    out = {}
    for p in sorted(glob.glob(os.path.join(path, "*.json"))):
        kind = kind_of(p)
        if kind is None:
            continue
        slug = os.path.basename(p).split(".")[0]
        out.setdefault(slug, {})[kind] = load(p, kind)
    for p in sorted(glob.glob(os.path.join(path, "*.sweep.png"))):
        out.setdefault(os.path.basename(p).split(".")[0], {})["sweep_png"] = os.path.basename(p)
    return out


@dataclass
class Row:
    """One version on one case on one GPU, with everything measured about it."""
    chapter: str
    gpu: str
    problem: str
    case: str
    version: str
    kind: str
    run: dict                                      # the bench run, or the torch row for a PyTorch peer
    copy_GBps: float                               # the ceiling of the process that timed it
    compute: dict = None                           # that file's compute_ceiling (None: not measured)
    race: dict = None                              # for a PyTorch peer: our version against it
    kernels: list = field(default_factory=list)    # Nsight Compute, per kernel (empty: not profiled)

    @property
    def dram_bytes(self):
        """Bytes Nsight Compute saw move through DRAM, summed over the kernels; None if not profiled."""
        if not self.kernels or any(k.get("dram_read_bytes") is None for k in self.kernels):
            return None
        return sum(k["dram_read_bytes"] + (k.get("dram_write_bytes") or 0) for k in self.kernels)


def ceiling_of(doc, problem, which="copy_ceiling"):
    """The copy (or compute) ceiling that `problem`'s runs in bench document `doc` were measured
    against: that of the process that timed them (see merge), else the document's own."""
    for p in doc.get("processes", []):
        if problem in p["problems"]:
            return p.get(which)
    return doc.get(which)


# What every part of a merged document must share: one build, one GPU model, one way of timing.
MERGE_SAME = ("schema_version", "chapter", "gpu", "commit", "exercises", "device", "cuda_runtime", "seed",
              "warmup", "reps", "l2", "l2_flush")


def merge(docs):
    """One bench document from `docs`, each from its own process of one build, each on problems the
    others did not run. The runs are concatenated in the order given; the top-level copy and compute
    ceilings are the first document's, and "processes" keeps each process's problems, date and
    ceilings, so that every run still divides by the ceiling measured beside it (ceiling_of).
    Raises ResultsError naming the file and the field that disagree, or the problem run twice."""
    if len(docs) < 2:
        raise ResultsError("merge needs at least two bench documents")
    first = docs[0]
    seen = {}
    processes = []
    for d in docs:
        if d.get("_kind", "bench") != "bench":
            raise ResultsError(f"{d.get('_file', '?')}: a {d['_kind']} file, not the benchmark's")
        for k in MERGE_SAME:
            if d.get(k) != first.get(k):
                raise ResultsError(f"{d.get('_file', '?')}: {k} is {d.get(k)!r}, "
                                   f"{first.get('_file', '?')} has {first.get(k)!r}: not one build's parts")
        parts = d.get("processes") or [{"problems": sorted({r["problem"] for r in d["runs"]}), "date": d["date"],
                                        "copy_ceiling": d["copy_ceiling"],
                                        "compute_ceiling": d.get("compute_ceiling")}]
        for p in parts:
            for problem in p["problems"]:
                if problem in seen:
                    raise ResultsError(f"{d.get('_file', '?')}: {problem} was run in {seen[problem]} too")
                seen[problem] = d.get("_file", "?")
            processes.append({k: v for k, v in p.items() if v is not None})
    out = {k: v for k, v in first.items() if not k.startswith("_")}
    out["date"] = max(d["date"] for d in docs)
    out["runs"] = [r for d in docs for r in d["runs"]]
    out["processes"] = processes
    return out


def rows(path, chapter=None):
    """Every run of a results folder, joined on (gpu, problem, case, version)."""
    chapter = chapter or os.path.basename(os.path.dirname(os.path.abspath(path)))
    out = []
    for slug, docs in folder(path).items():
        profiled = {}
        for r in (docs.get("profile") or {}).get("runs", []):
            profiled[(r["problem"], r["case"], r["version"])] = r["kernels"]
        if "bench" in docs:
            b = docs["bench"]
            for r in b["runs"]:
                key = (r["problem"], r["case"], r["version"])
                out.append(Row(chapter, b["gpu"], *key, r["kind"], r, ceiling_of(b, r["problem"])["GBps"],
                               ceiling_of(b, r["problem"], "compute_ceiling"), None, profiled.get(key, [])))
        if "torch" in docs:
            t = docs["torch"]
            for r in t["runs"]:
                key = (r["problem"], r["case"], r["version"])
                out.append(Row(chapter, t["gpu"], *key, "peer", r, t["copy_ceiling"]["GBps"], None, r.get("race"),
                               profiled.get(key, [])))
    return out


def chapter_results(build_results=None):
    """{chapter name: folder(...)} for every chapter of chapters.list with results: the committed
    NN_chapter/results/, or a user's run in BUILD_RESULTS/NN_chapter/."""
    out = {}
    for c in chapters.existing():
        path = os.path.join(c.path, "results") if build_results is None else os.path.join(build_results, c.name)
        if os.path.isdir(path):
            out[c.name] = folder(path)
    return out


def validate(paths):
    """Every results file in `paths` loaded and checked: 1 on the first that fails; 77 when they all
    load but fastjsonschema is missing, so the full schema could not be applied."""
    count = 0
    for path in paths:
        for p in sorted(glob.glob(os.path.join(path, "*.json"))):
            if kind_of(p) is None:
                continue
            try:
                load(p)
            except ResultsError as e:
                print(f"error: {e}")
                return 1
            count += 1
    if not have_full_validation():
        print(f"{count} results files load, but fastjsonschema is not importable here: not checked against the schema")
        return 77
    print(f"{count} results files follow results.schema.json")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--validate", action="store_true", help="check results files against the schema")
    ap.add_argument("--merge", metavar="OUT", help="merge the bench files given into OUT")
    ap.add_argument("folders", nargs="*", help="results folders (default: every chapter's results/); "
                                                "with --merge, the bench files to merge")
    args = ap.parse_args()
    if args.merge:
        try:
            doc = merge([load(p, "bench") for p in args.folders])
        except ResultsError as e:
            print(f"error: {e}")
            return 2
        with open(args.merge, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
            f.write("\n")
        try:
            load(args.merge, "bench")
        except ResultsError as e:
            print(f"error: the merged file does not load: {e}")
            return 1
        print(f"{args.merge}: {len(doc['runs'])} runs from {len(doc['processes'])} processes")
        return 0
    if not args.validate:
        ap.error("nothing to do (see --help)")
    paths = args.folders or [os.path.join(c.path, "results") for c in chapters.existing()
                             if os.path.isdir(os.path.join(c.path, "results"))]
    missing = [p for p in paths if not os.path.isdir(p)]
    if missing:
        print(f"error: {missing[0]}: no such folder")
        return 2
    return validate(paths)


if __name__ == "__main__":
    sys.exit(main())
