"""The chapter list (chapters.list at the repository root) and names shared by the tools."""
import datetime
import json
import os
import re
from collections import namedtuple

import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
Chapter = namedtuple("Chapter", "name blurb path headline")


def all_chapters():
    out = []
    with open(os.path.join(ROOT, "chapters.list"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = [f.strip() for f in line.split("|")]
            name, blurb = fields[0], fields[1] if len(fields) > 1 else ""
            headline = [p.strip() for p in fields[2].split(",") if p.strip()] if len(fields) > 2 else []
            out.append(Chapter(name, blurb, os.path.join(ROOT, name), headline))
    return out


def existing():
    """The chapters written so far: their folder has a meson.build."""
    return [c for c in all_chapters() if os.path.isfile(os.path.join(c.path, "meson.build"))]


def slug(gpu_name):
    """'NVIDIA H100 80GB HBM3' -> 'NVIDIA_H100_80GB_HBM3', as tut::gpu_slug does."""
    out = re.sub(r"[^A-Za-z0-9.\-]+", "_", gpu_name).strip("_")
    return out or "unknown_gpu"


def write_results(build, chapter, gpu, suffix, doc, path=None):
    """Writes BUILD/results/CHAPTER/<gpu><suffix> (".profile.json", ".torch.json"), or `path` when
    given, with the fields every results file has, and returns its path."""
    if path is None:
        out_dir = os.path.join(os.path.abspath(build), "results", chapter)
        path = os.path.join(out_dir, slug(gpu) + suffix)
    if os.path.dirname(os.path.abspath(path)):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    full = {"schema_version": 3, "chapter": chapter, "gpu": gpu,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), **doc}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(full, f, indent=2)
        f.write("\n")
    print(f"wrote {path}")
    return path


class Failure(Exception):
    """A tool's one-line error for the user: a bad argument, a missing file or build."""


def run_tool(main):
    """Runs a tool's main(): its return value is the exit code; a Failure is printed as one line
    ("error: ...") and exits 2, never a traceback."""
    try:
        sys.exit(main())
    except Failure as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


def replace_between(text, tag, body):
    """`text` with what stands between <!-- TAG:begin --> and <!-- TAG:end --> replaced by `body`;
    unchanged when the markers are absent."""
    begin, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    if begin not in text or end not in text:
        return text
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}{end}{tail}"
