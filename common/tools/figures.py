#!/usr/bin/env python3
"""Figures in a lesson's prose, checked against the committed results.

A number in a README's prose can name where it comes from in an HTML comment right after it
(the comment does not show on the rendered page):

    DRAM is 72.4<!-- fig: NVIDIA_H100_80GB_HBM3.profile.json
        runs[problem=relu_mask_f32,version=v2_warp_ballot].kernels[0].dram_pct --> % busy

The check computes the comment's expression and requires the printed number to be that value
rounded to the digits printed: 0.734 passes for any value in [0.7335, 0.7345]. A rerun that moves
the value makes the check fail until the prose follows it.

The expression
  - numbers and references, joined by + - * / and parentheses;
  - a reference is [FILE] PATH. FILE is relative to the README's results/ folder (another
    chapter's: ../../01_elementwise/results/...). A reference without a FILE reads the file the
    comment named last;
  - PATH is names joined by '.', each name followed by any number of [selectors]:
        copy_ceiling.GBps          a field ("Metric Value" in quotes when it has spaces)
        kernels[0], kernels[-1]    a list element by position
        runs[problem=scan_i32,case=n=268435456,version=v7_decoupled_lookback]
                                   the one list element whose fields have these values
                                   (a value runs to the next ',' or ']', or is "quoted";
                                   numbers compare as numbers); none or several is an error
        line["v5_coarsened_vector"] the one element whose text contains this text, starting
                                   where a token starts; runs of spaces count as one
  - a results file (<gpu>.json, .sweep.json, .torch.json, .profile.json) is read through
    results.py, which checks it against results.schema.json; another .json file as it is; a .csv file as {"rows": [one object per row]}; a .txt file as
    {"para": [...], "line": [...]}, where a para (lines between blank lines) has "text" and "line",
    and a line has "text" and "num", the whitespace-separated tokens that are numbers (a trailing
    x or % dropped), in order.
  - <!-- fig-let: NAME = REFERENCE --> anywhere in the README names a reference: $NAME, and
    $NAME.more.path, stand for it in every fig comment of that README. NAME = EXPRESSION names a
    value: $NAME stands for the expression's value.

The printed number may carry thousands separators (1,048,576), an exponent (1.075e9), and a '%' or
'x' or '×' right after it. A percentage is written as one: `... * 100`.

  figures.py README.md ...          check every figure; exit 1 on any error
  figures.py --show README.md ...   also print each figure with the value it computes to
  figures.py --eval EXPR README.md  print what EXPR computes to, against that README's results/
"""
import argparse
import csv
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402

COMMENT = re.compile(r"<!--\s*fig(-let)?:(.*?)-->", re.S)
PRINTED = re.compile(r"(?P<num>[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?)"
                     r"(?:\s?%|×|x)?$")
FILE = re.compile(r"(?:\.\./)*[\w.\-/]*?\w\.(?:json|csv|txt)(?=\s)")
NAME = re.compile(r"[A-Za-z_]\w*")
NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")
TOKEN_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


class FigureError(Exception):
    pass


# ---- the result files: the only place that knows how a file is read ------------------------------

def as_number(v):
    if isinstance(v, bool):
        raise FigureError(f"{v!r} is not a number")
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        s = v.strip()
        if THOUSANDS.fullmatch(s):
            s = s.replace(",", "")
        if s.endswith(("x", "%")):
            s = s[:-1]
        if TOKEN_NUMBER.fullmatch(s):
            return float(s)
    raise FigureError(f"{str(v)[:60]!r} is not a number")


def read_text(path):
    def line(text):
        nums = []
        for tok in text.split():
            try:
                nums.append(as_number(tok))
            except FigureError:
                pass
        return {"text": text, "num": nums}

    with open(path, encoding="utf-8") as fh:
        lines = [line(t.rstrip("\n")) for t in fh]
    paras, cur = [], []
    for ln in lines + [line("")]:
        if ln["text"].strip():
            cur.append(ln)
        elif cur:
            paras.append({"text": "\n".join(x["text"] for x in cur), "line": cur})
            cur = []
    return {"line": lines, "para": paras}


def read_file(path, cache):
    if path not in cache:
        if not os.path.isfile(path):
            raise FigureError(f"no file {path}")
        if results.kind_of(path):  # a results file (<gpu>.json, .sweep.json, ...), checked against its schema
            try:
                cache[path] = results.load(path)
            except results.ResultsError as e:
                raise FigureError(str(e)) from None
        elif path.endswith(".json"):
            with open(path, encoding="utf-8") as fh:
                cache[path] = json.load(fh)
        elif path.endswith(".csv"):
            with open(path, encoding="utf-8", newline="") as fh:
                cache[path] = {"rows": list(csv.DictReader(fh))}
        else:
            cache[path] = read_text(path)
    return cache[path]


def equal(field, want):
    if isinstance(field, (int, float)) and not isinstance(field, bool):
        try:
            return float(field) == as_number(want)
        except FigureError:
            return False
    return str(field) == want


def select(items, sel, where):
    """items[sel]: a position, key=value conditions, or a text to contain."""
    if not isinstance(items, list):
        raise FigureError(f"{where}: [{sel}] needs a list")
    if re.fullmatch(r"-?\d+", sel.strip()):
        k = int(sel)
        if not -len(items) <= k < len(items):
            raise FigureError(f"{where}[{sel}]: the list has {len(items)} elements")
        return items[k]
    conds = split_outside_quotes(sel, ",")
    if len(conds) == 1 and "=" not in outside_quotes(conds[0]):
        # whitespace runs count as one space, and the text must start where a token starts
        # ("8 strided" matches "8     strided ..." but not "128   strided ...")
        pattern = re.compile(r"(?:^|\s)" + re.escape(" ".join(unquote(conds[0]).split())))
        found = [x for x in items
                 if pattern.search(" ".join((x.get("text", "") if isinstance(x, dict) else str(x)).split()))]
    else:
        pairs = []
        for c in conds:
            key, eq, value = c.partition("=")
            if not eq:
                raise FigureError(f"{where}[{sel}]: '{c}' is not key=value")
            pairs.append((unquote(key), unquote(value)))
        found = [x for x in items if isinstance(x, dict) and all(k in x and equal(x[k], v) for k, v in pairs)]
    if len(found) != 1:
        raise FigureError(f"{where}[{sel}]: {len(found)} elements match, not one")
    return found[0]


def field(obj, name, where):
    if not isinstance(obj, dict) or name not in obj:
        raise FigureError(f"{where}: no field '{name}'")
    return obj[name]


# ---- the expression -------------------------------------------------------------------------------

def unquote(s):
    s = s.strip()
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s


def outside_quotes(s):
    return re.sub(r'"[^"]*"', "", s)


def split_outside_quotes(s, sep):
    parts, cur, quoted = [], "", False
    for ch in s:
        if ch == '"':
            quoted = not quoted
        if ch == sep and not quoted:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


class Parser:
    def __init__(self, text, results, lets, cache, busy=frozenset()):
        self.s, self.i = text, 0
        self.results, self.lets, self.cache, self.busy = results, lets, cache, busy
        self.file = None

    def error(self, msg):
        raise FigureError(f"{msg} at '{self.s[self.i:self.i + 40].strip()}'")

    def ws(self):
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def peek(self):
        self.ws()
        return self.s[self.i] if self.i < len(self.s) else ""

    def parse(self):
        v = self.expr()
        if self.peek():
            self.error("unexpected text")
        return v

    def expr(self):
        v = self.term()
        while self.peek() in ("+", "-"):
            op = self.s[self.i]
            self.i += 1
            w = self.term()
            v = v + w if op == "+" else v - w
        return v

    def term(self):
        v = self.unary()
        while self.peek() in ("*", "/"):
            op = self.s[self.i]
            self.i += 1
            w = self.unary()
            if op == "/" and w == 0:
                self.error("division by zero")
            v = v * w if op == "*" else v / w
        return v

    def unary(self):
        if self.peek() == "-":
            self.i += 1
            return -self.unary()
        if self.peek() == "(":
            self.i += 1
            v = self.expr()
            if self.peek() != ")":
                self.error("missing ')'")
            self.i += 1
            return v
        m = NUMBER.match(self.s, self.i)
        if m:
            self.i = m.end()
            return float(m.group())
        return as_number(self.reference())

    def reference(self):
        if self.peek() == "$":
            m = NAME.match(self.s, self.i + 1)
            if not m or m.group() not in self.lets:
                self.error("no such fig-let name")
            self.i = m.end()
            name, (file, path) = m.group(), self.lets[m.group()]
            if file is None:  # a named expression
                if name in self.busy:
                    self.error(f"${name} refers to itself")
                sub = Parser(path, self.results, self.lets, self.cache, self.busy | {name})
                return sub.parse()
            self.file = file
            obj = self.walk(read_file(file, self.cache), path, f"${name}")
            return self.path(obj, f"${name}", first=False)
        m = FILE.match(self.s, self.i)
        if m:
            self.file = os.path.normpath(os.path.join(self.results, m.group()))
            self.i = m.end()
            self.ws()
        if self.file is None:
            self.error("a reference needs a file first")
        return self.path(read_file(self.file, self.cache), os.path.basename(self.file), first=True)

    def walk(self, obj, path, where):
        if not path:
            return obj
        sub = Parser(path, self.results, self.lets, self.cache)
        v = sub.path(obj, where, first=True)
        if sub.peek():
            sub.error("unexpected text")
        return v

    def path(self, obj, where, first):
        while True:
            if first or (self.i < len(self.s) and self.s[self.i] == "."):
                if not first:
                    self.i += 1
                first = False
                if self.i < len(self.s) and self.s[self.i] == '"':
                    end = self.s.find('"', self.i + 1)
                    if end < 0:
                        self.error("unclosed quote")
                    name = self.s[self.i + 1:end]
                    self.i = end + 1
                else:
                    m = NAME.match(self.s, self.i)
                    if not m:
                        self.error("expected a field name")
                    name = m.group()
                    self.i = m.end()
                obj = field(obj, name, where)
                where += "." + name
            elif self.i < len(self.s) and self.s[self.i] == "[":
                j, quoted = self.i + 1, False
                while j < len(self.s) and (quoted or self.s[j] != "]"):
                    quoted ^= self.s[j] == '"'
                    j += 1
                if j >= len(self.s):
                    self.error("unclosed '['")
                obj = select(obj, self.s[self.i + 1:j], where)
                where += f"[{self.s[self.i + 1:j]}]"
                self.i = j + 1
            else:
                return obj


# ---- the README -----------------------------------------------------------------------------------

def path_end(s, i):
    """Where the path that starts at s[i] ends: names, dots and [selectors], nothing else."""
    while i < len(s):
        if s[i] == "[":
            quoted = False
            while i < len(s) and (quoted or s[i] != "]"):
                quoted ^= s[i] == '"'
                i += 1
            i += 1
        elif s[i] == '"':
            i = s.find('"', i + 1) + 1 or len(s)
        elif s[i] == "." or s[i].isalnum() or s[i] == "_":
            i += 1
        else:
            return i
    return len(s)


def lets_of(text, results):
    lets, errors = {}, []
    for m in COMMENT.finditer(text):
        if not m.group(1):
            continue
        line = text.count("\n", 0, m.start()) + 1
        name, eq, ref = m.group(2).partition("=")
        name, ref = name.strip(), " ".join(ref.split())
        fm = FILE.match(ref + " ")
        if not eq or not NAME.fullmatch(name) or not ref:
            errors.append((line, "fig-let must read NAME = FILE PATH, or NAME = EXPRESSION"))
        elif name in lets:
            errors.append((line, f"${name} is defined twice"))
        elif fm and path_end(ref, fm.end() + 1) == len(ref):
            lets[name] = (os.path.normpath(os.path.join(results, fm.group())), ref[fm.end():].strip())
        else:
            lets[name] = (None, ref)
    return lets, errors


def figures(readme_path):
    """[(line, printed, value or None, error or None)] for every fig comment in the README."""
    with open(readme_path, encoding="utf-8") as fh:
        text = fh.read()
    results = os.path.join(os.path.dirname(os.path.abspath(readme_path)), "results")
    lets, let_errors = lets_of(text, results)
    out = [(line, "", None, err) for line, err in let_errors]
    cache = {}
    for m in COMMENT.finditer(text):
        if m.group(1):
            continue
        line = text.count("\n", 0, m.start()) + 1
        before = text[max(0, m.start() - 40):m.start()]
        pm = PRINTED.search(before)
        if not pm:
            out.append((line, "", None, "no number right before the fig comment"))
            continue
        printed = pm.group("num")
        try:
            value = Parser(" ".join(m.group(2).split()), results, lets, cache).parse()
        except FigureError as e:
            out.append((line, printed, None, str(e)))
            continue
        out.append((line, printed, value, None if matches(printed, value) else
                    f"prints {printed}, the files give {value:.6g}"))
    return out


def matches(printed, value):
    s = printed.replace(",", "").replace("−", "-")
    mant, _, exp = s.lower().partition("e")
    decimals = len(mant.partition(".")[2])
    scale = 10.0 ** int(exp) if exp else 1.0
    return abs(value - float(s)) <= 0.5 * 10.0 ** -decimals * scale * (1 + 1e-9)


def fix(readme_path):
    """Rewrites each printed number whose source moved (a rerun) to the value its files give, at the
    digits it was printed with; returns [(line, old, new)]. Only plain decimals are rewritten; a
    number printed another way (an exponent, a thousands separator) stays an error to mend by hand.
    The prose around a changed number is the author's to reread."""
    with open(readme_path, encoding="utf-8") as fh:
        text = fh.read()
    results = os.path.join(os.path.dirname(os.path.abspath(readme_path)), "results")
    lets, _ = lets_of(text, results)
    cache, edits = {}, []
    for m in COMMENT.finditer(text):
        if m.group(1):
            continue
        before = text[max(0, m.start() - 40):m.start()]
        pm = PRINTED.search(before)
        if not pm or not re.fullmatch(r"-?\d+(\.\d+)?", pm.group("num")):
            continue
        try:
            value = Parser(" ".join(m.group(2).split()), results, lets, cache).parse()
        except FigureError:
            continue
        printed = pm.group("num")
        if matches(printed, value):
            continue
        decimals = len(printed.partition(".")[2])
        new = f"{value:.{decimals}f}"
        start = max(0, m.start() - 40) + pm.start("num")
        edits.append((start, start + len(printed), printed, new, text.count("\n", 0, m.start()) + 1))
    for start, end, old, new, _ in reversed(edits):
        text = text[:start] + new + text[end:]
    with open(readme_path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return [(line, old, new) for _, _, old, new, line in edits]


def figure_errors(readme_path):
    """What is wrong with the README's figures: ["README.md:LINE: message", ...]; empty when
    every figure is what its files give."""
    return [f"{readme_path}:{line}: {err}" for line, _, _, err in figures(readme_path) if err]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--show", action="store_true", help="print every figure and its value")
    ap.add_argument("--eval", metavar="EXPR", help="print EXPR's value against the README's results/")
    ap.add_argument("--fix", action="store_true",
                    help="rewrite printed numbers to what their files give now (after a rerun); reread the prose")
    ap.add_argument("readmes", nargs="+")
    args = ap.parse_args()
    if args.eval:
        readme = args.readmes[0]
        with open(readme, encoding="utf-8") as fh:
            text = fh.read()
        results = os.path.join(os.path.dirname(os.path.abspath(readme)), "results")
        lets, _ = lets_of(text, results)
        try:
            print(f"{Parser(args.eval, results, lets, {}).parse():.10g}")
        except FigureError as e:
            print(e)
            return 1
        return 0
    if args.fix:
        for readme in args.readmes:
            for line, old, new in fix(readme):
                print(f"{readme}:{line}: {old} -> {new}")
    failed = 0
    for readme in args.readmes:
        figs = figures(readme)
        for line, printed, value, err in figs:
            if err:
                print(f"{readme}:{line}: {err}")
            elif args.show:
                print(f"{readme}:{line}: {printed} = {value:.6g}")
        bad = sum(1 for f in figs if f[3])
        failed += bad
        print(f"{readme}: {len(figs) - bad} of {len(figs)} figures match the results")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
