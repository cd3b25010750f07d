#!/usr/bin/env python3
"""Tests of figures.py: python3 common/tools/test_figures.py (exit 1 on a failure)."""
import json
import os
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures import figure_errors, figures, fix  # noqa: E402

BENCH = {
    "copy_ceiling": {"GBps": 3021.492689782596},
    "runs": [
        {"problem": "scan_i32", "case": "n=16777216", "version": "v7", "ms_median": 0.06027199886739254},
        {"problem": "scan_i32", "case": "n=16777216", "version": "cub", "ms_median": 0.06481600180268288},
        {"problem": "scan_i32", "case": "n=268435456 segment=1024", "version": "v7", "ms_median": 0.82},
        {"problem": "scan_i32", "case": "n=268435456 segment=1024", "version": "torch.cumsum(dtype=int32)",
         "ms_median": 1.0183},
        {"problem": "seg", "case": "n=1", "version": "v5", "kernels": [{"dram_pct": 72.39}, {"dram_pct": 0.2}]},
    ],
}
CSV = ('"Block Size","Metric Name","Metric Value"\n'
       '"(64, 1, 1)","gpu__time_duration.sum","704,832"\n'
       '"(256, 1, 1)","gpu__time_duration.sum","542,976"\n')
TEXT = """header line
config                            span ms     load+scan
<16, 2, 0, 1, false, 8, false>      0.901   4.86   7.42

segscan_i32 [i32]  n=268435456 segment=128  floor
v5_coarsened_vector  own   v4 with one 16-byte load   32  1.2649 [1.2640-1.2903]   1697.8    0.561     1.88x

segscan_i32 [i32]  n=268435456 segment=256  floor
v5_coarsened_vector  own   v4 with one 16-byte load   32  0.7101 [0.7083-0.7408]   3024.4    1.000     3.61x
"""


def lesson(body):
    """A README with a results/ folder beside it; returns the README's path."""
    root = tempfile.mkdtemp()
    os.makedirs(os.path.join(root, "results"))
    with open(os.path.join(root, "results", "gpu.notes.json"), "w") as fh:
        json.dump(BENCH, fh)
    with open(os.path.join(root, "results", "gpu.ncu.csv"), "w") as fh:
        fh.write(CSV)
    with open(os.path.join(root, "results", "gpu.timeline.txt"), "w") as fh:
        fh.write(TEXT)
    path = os.path.join(root, "README.md")
    with open(path, "w") as fh:
        fh.write(body)
    return path


def errors(body):
    return figure_errors(lesson(body))


def check(cond, what):
    if not cond:
        raise AssertionError(what)


RATIO = ("gpu.notes.json runs[problem=scan_i32,case=n=16777216,version=v7].ms_median / "
         "runs[problem=scan_i32,case=n=16777216,version=cub].ms_median")


def test_ratio_to_the_printed_digits():
    check(errors(f"v7 takes 0.930<!-- fig: {RATIO} --> of CUB's time.\n") == [], "0.930 passes")
    check(errors(f"0.93<!-- fig: {RATIO} -->\n") == [], "fewer digits pass too")


def test_a_wrong_digit_fails():
    errs = errors(f"v7 takes 0.931<!-- fig: {RATIO} --> of CUB's time.\n")
    check(len(errs) == 1 and "prints 0.931" in errs[0] and ":1:" in errs[0], errs)
    check(errors(f"0.9299<!-- fig: {RATIO} -->\n") == [], "four digits: 0.92989...")
    check(len(errors(f"0.9298<!-- fig: {RATIO} -->\n")) == 1, "the fourth digit wrong")


def test_percent_thousands_and_exponent():
    check(errors(f"7.0<!-- fig: (1 - {RATIO}) * 100 --> % less time\n") == [], "a percentage")
    check(errors(f"7.0%<!-- fig: (1 - {RATIO}) * 100 -->\n") == [], "'%' attached")
    check(errors("1,048,576<!-- fig: 1024 * 1024 --> blocks\n") == [], "thousands separators")
    check(errors("3.021e3<!-- fig: gpu.notes.json copy_ceiling.GBps -->\n") == [], "an exponent")
    check(len(errors("3.022e3<!-- fig: gpu.notes.json copy_ceiling.GBps -->\n")) == 1, "a wrong exponent form")


def test_selectors():
    ok = [
        "3021.5<!-- fig: gpu.notes.json copy_ceiling.GBps -->",
        "72.4<!-- fig: gpu.notes.json runs[problem=seg,version=v5].kernels[0].dram_pct -->",
        "0.2<!-- fig: gpu.notes.json runs[problem=seg].kernels[-1].dram_pct -->",
        '1.2<!-- fig: gpu.notes.json runs[case="n=268435456 segment=1024",version=torch.cumsum(dtype=int32)]'
        '.ms_median / runs[case=n=268435456 segment=1024,version=v7].ms_median -->',
    ]
    for body in ok:
        check(errors(body + "\n") == [], body)
    errs = errors("1<!-- fig: gpu.notes.json runs[problem=scan_i32].ms_median -->\n")
    check(len(errs) == 1 and "4 elements match" in errs[0], errs)
    errs = errors("1<!-- fig: gpu.notes.json runs[problem=nothing].ms_median -->\n")
    check(len(errs) == 1 and "0 elements match" in errs[0], errs)
    errs = errors("1<!-- fig: gpu.notes.json copy_ceiling.GBs -->\n")
    check(len(errs) == 1 and "no field 'GBs'" in errs[0], errs)


def test_csv_and_text():
    ok = [
        '704832<!-- fig: gpu.ncu.csv rows[Block Size="(64, 1, 1)",Metric Name=gpu__time_duration.sum].'
        '"Metric Value" -->',
        '5.89<!-- fig: gpu.timeline.txt line["<16, 2, 0, 1, false, 8, false>"].num[0] + 4.988 -->',
        '1.2649<!-- fig: gpu.timeline.txt para["segment=128"].line[v5_coarsened_vector].num[1] -->',
        '1.88x<!-- fig: gpu.timeline.txt para["segment=128"].line[v5_coarsened_vector].num[-1] -->',
    ]
    for body in ok:
        check(errors(body + "\n") == [], body)
    check(errors('0.901<!-- fig: gpu.timeline.txt line["<16,  2, 0, 1, false, 8,   false>"].num[0] -->\n') == [],
          "runs of spaces count as one")
    errs = errors('1<!-- fig: gpu.timeline.txt line["6, 2, 0"].num[0] -->\n')
    check(len(errs) == 1 and "0 elements match" in errs[0], "a text must start where a token starts")
    errs = errors("1<!-- fig: gpu.timeline.txt line[v5_coarsened_vector].num[1] -->\n")
    check(len(errs) == 1 and "2 elements match" in errs[0], errs)


def test_names_and_layout():
    body = ("<!-- fig-let: v7 = gpu.notes.json runs[problem=scan_i32,case=n=16777216,version=v7] -->\n"
            "<!-- fig-let: cub = gpu.notes.json runs[problem=scan_i32,case=n=16777216,version=cub] -->\n"
            "Text 0.930<!-- fig: $v7.ms_median / $cub.ms_median --> and, over two lines,\n"
            "0.930<!-- fig: $v7.ms_median /\n     $cub.ms_median --> again.\n")
    check(errors(body) == [], body)
    check(errors("<!-- fig-let: ratio = 100 * ($v7.ms_median / $cub.ms_median) -->\n"
                 "<!-- fig-let: v7 = gpu.notes.json runs[problem=scan_i32,case=n=16777216,version=v7] -->\n"
                 "<!-- fig-let: cub = gpu.notes.json runs[problem=scan_i32,case=n=16777216,version=cub] -->\n"
                 "93.0<!-- fig: $ratio --> %, 7.0<!-- fig: 100 - $ratio --> % less\n") == [], "a named expression")
    check(len(errors("<!-- fig-let: a = 1 + $a -->\n1<!-- fig: $a -->\n")) == 1, "a name that uses itself")
    figs = figures(lesson(body))
    check([f[0] for f in figs] == [3, 4], figs)
    check(len(errors("no number<!-- fig: 1 -->\n")) == 1, "a comment after no number")
    check(len(errors("1<!-- fig: $nothing.ms -->\n")) == 1, "an undefined name")
    check(len(errors("1<!-- fig: copy_ceiling.GBps -->\n")) == 1, "a reference with no file")
    check(len(errors("1<!-- fig: nothing.json x -->\n")) == 1, "a missing file")
    check(len(errors("1<!-- fig: 1 / 0 -->\n")) == 1, "division by zero")


def test_fix_rewrites_a_moved_number():
    path = lesson(f"v7 takes 0.931<!-- fig: {RATIO} --> of CUB's time, 1,000<!-- fig: 999 --> times.\n")
    changed = fix(path)
    check([(old, new) for _, old, new in changed] == [("0.931", "0.930")], changed)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    check(text.startswith("v7 takes 0.930<!--"), text)
    check(len(figure_errors(path)) == 1, "a thousands separator is left for the author")


def main():
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_")]
    failed = 0
    for t in tests:
        try:
            t()
            print(f"ok      {t.__name__}")
        except Exception:
            failed += 1
            print(f"FAILED  {t.__name__}")
            traceback.print_exc()
    print(f"{len(tests) - failed} of {len(tests)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
