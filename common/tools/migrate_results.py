#!/usr/bin/env python3
"""Converts results files from schema 2 to schema 3 in place; what changed needs no re-measuring.

  migrate_results.py FOLDER ...      every <gpu>*.json of each results folder

Schema 3 (results.schema.json) drops the fields schema 2 kept twice: the top-level
copy_ceiling_GBps, copy_ceiling_bytes and copy_ceiling_shape (copy_ceiling.GBps, .bytes and
.winner hold them), each run's "size" (its "case") and "regs" (the largest of "regs_per_kernel").
It adds compute_ceiling, null here because schema 2 did not measure it; and gives PyTorch's rows
their case's FLOPs, taken from the benchmark file of the same GPU (schema 2 wrote 0). A file
already at schema 3 is left as it is.
"""
import glob
import json
import os
import sys


def bench_flops(folder, slug):
    path = os.path.join(folder, slug + ".json")
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return {(r["problem"], r["case"]): r["flops"] for r in doc["runs"]}


def migrate(doc, kind, flops):
    for key in ("copy_ceiling_GBps", "copy_ceiling_bytes", "copy_ceiling_shape"):
        doc.pop(key, None)
    for r in doc.get("runs", []):
        r.pop("size", None)
        r.pop("regs", None)
        if kind == "torch" and not r.get("flops"):
            r["flops"] = flops.get((r["problem"], r["case"]), 0)
    if kind in ("bench", "sweep"):
        doc.setdefault("compute_ceiling", None)
    doc["schema_version"] = 3
    return doc


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    changed = 0
    for folder in sys.argv[1:]:
        if not os.path.isdir(folder):
            print(f"error: {folder}: no such folder")
            return 2
        for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
            base = os.path.basename(path)
            slug, _, rest = base[: -len(".json")].partition(".")
            kind = rest or "bench"
            if kind not in ("bench", "sweep", "torch", "profile"):
                continue
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            if doc.get("schema_version") == 3:
                continue
            if doc.get("schema_version") != 2:
                print(f"error: {path}: schema_version {doc.get('schema_version')}, this converts 2")
                return 1
            migrate(doc, kind, bench_flops(folder, slug) if kind == "torch" else {})
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=2)
                f.write("\n")
            print(f"migrated {path}")
            changed += 1
    print(f"{changed} files migrated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
