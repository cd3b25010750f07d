#!/usr/bin/env python3
"""Run Nsight Compute over every version of a chapter and write BUILD/results/CH/<gpu>.profile.json.

  profile.py --build BUILD [CHAPTER ...]       (./tutorial profile runs it)

For each problem's default case and each version, one process runs the version once between
cudaProfilerStart/Stop (`bench --profile`) under `ncu --profile-from-start off`, and these are kept
for each kernel it launched:

  dram_pct              DRAM throughput, % of peak
  achieved_occupancy    % of the SM's warp slots in use, averaged over active cycles
  sectors_per_request   32-byte sectors per global load request (4 = a warp's 4-byte loads are
                        coalesced into whole 128-byte lines; 16 = each 16-byte load too; 2 for
                        2-byte loads)
  l2_sectors_per_request the same at L2, for loads
  lsu_pipe_pct          how busy the load/store pipe is, % of peak
  sm_balance            the least busy SM's active cycles over the busiest's: 1 when every SM
                        works until the end, less when some SMs sit idle while others finish
  stalls                the three commonest reasons a warp could not issue, % of active cycles
  in flight             bytes a thread has in flight (its loads before its first store, read off
                        the SASS by tut_sass), times the warps resident per SM: what an SM has
                        waiting on memory, against what Little's law says it needs (the copy
                        ceiling times the latency of a load that misses the caches, per SM)

Where ncu is missing or cannot read the GPU's counters, says so, writes nothing, exits 77.
"""
import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chapters  # noqa: E402
import torch_peers  # noqa: E402

STALLS = ["long_scoreboard", "lg_throttle", "drain", "wait", "barrier", "membar", "mio_throttle",
          "short_scoreboard", "math_pipe_throttle", "not_selected", "selected", "no_instruction",
          "dispatch_stall", "branch_resolving", "imc_miss", "tex_throttle", "sleeping", "misc"]
METRICS = [
    "gpu__time_duration.sum",
    "launch__grid_size", "launch__block_size", "launch__registers_per_thread", "launch__waves_per_multiprocessor",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum", "dram__bytes_write.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__warps_active.avg.per_cycle_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_requests_srcunit_tex_op_read.sum",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "sm__cycles_active.min", "sm__cycles_active.max", "sm__cycles_active.avg",
] + [f"smsp__warp_issue_stalled_{s}_per_warp_active.pct" for s in STALLS]
# Kept where this ncu knows them (ncu --query-metrics): shared-memory wavefronts (a scan's traffic
# inside the SM) and instructions executed, per kernel.
OPTIONAL = ["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "smsp__inst_executed.sum"]


def available(ncu, metrics):
    """The metrics whose base name `ncu --query-metrics` lists (all of them if the query fails)."""
    proc = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True)
    if proc.returncode != 0:
        return metrics
    known = {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}
    return [m for m in metrics if m.rsplit(".", 1)[0] in known]


def find_tool(name):
    found = shutil.which(name)
    if found:
        return found
    nvcc = shutil.which("nvcc")
    if nvcc:
        cand = os.path.join(os.path.dirname(os.path.realpath(nvcc)), name)
        if os.access(cand, os.X_OK):
            return cand
    cand = os.path.join("/usr/local/cuda/bin", name)
    return cand if os.access(cand, os.X_OK) else None


def number(text):
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def ncu_kernels(ncu, program, metrics=None):
    """The kernels one profiled run of `program` launched: [{"mangled": ..., metric: value}]."""
    cmd = [ncu, "--profile-from-start", "off", "--csv", "--page", "raw", "--print-units", "base",
           "--print-kernel-base", "mangled", "--clock-control", "none", "--metrics",
           ",".join(metrics or METRICS)] + program
    proc = subprocess.run(cmd, capture_output=True, text=True)
    out = proc.stdout
    header = next((i for i, l in enumerate(out.splitlines()) if l.startswith('"ID"')), None)
    if proc.returncode == 0 and header is None and "No kernels were profiled" in proc.stdout + proc.stderr:
        return [], None  # a library call that runs no kernel ncu can see (the driver's cudaMemcpyAsync)
    if proc.returncode != 0 or header is None:
        return None, (proc.stderr + proc.stdout)[-2000:]
    rows = list(csv.reader(io.StringIO("\n".join(out.splitlines()[header:]))))
    names, units = rows[0], rows[1]
    kernels = []
    for row in rows[2:]:
        rec = dict(zip(names, row))
        k = {"mangled": rec.get("Kernel Name", ""), "launch": rec.get("ID")}
        for m in metrics or METRICS:
            k[m] = number(rec.get(m))
        kernels.append(k)
    return kernels, None


def summarize(k, sass, machine):
    def ratio(a, b):
        return a / b if a is not None and b else None

    stalls = sorted(((s, k.get(f"smsp__warp_issue_stalled_{s}_per_warp_active.pct") or 0.0) for s in STALLS),
                    key=lambda x: -x[1])[:3]
    per_thread = sass.get(k["mangled"], {}).get("load_bytes_before_first_store")
    warps = k.get("sm__warps_active.avg.per_cycle_active")
    has = per_thread * 32 * warps if per_thread is not None and warps is not None else None
    return {
        "mangled": k["mangled"],
        "name": sass.get(k["mangled"], {}).get("name", k["mangled"]),
        "grid": k["launch__grid_size"], "block": k["launch__block_size"],
        "registers": k["launch__registers_per_thread"], "waves_per_sm": k["launch__waves_per_multiprocessor"],
        "duration_ns": k["gpu__time_duration.sum"],
        "shared_wavefronts": k.get("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"),
        "instructions": k.get("smsp__inst_executed.sum"),
        "dram_pct": k["dram__throughput.avg.pct_of_peak_sustained_elapsed"],
        "dram_read_bytes": k["dram__bytes_read.sum"], "dram_write_bytes": k["dram__bytes_write.sum"],
        "achieved_occupancy_pct": k["sm__warps_active.avg.pct_of_peak_sustained_active"],
        "theoretical_occupancy_pct": k["sm__maximum_warps_per_active_cycle_pct"],
        "warps_per_sm": warps,
        "sectors_per_request_ld": ratio(k["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"],
                                        k["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]),
        "sectors_per_request_st": ratio(k["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"],
                                        k["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"]),
        "l2_sectors_per_request_ld": ratio(k["lts__t_sectors_srcunit_tex_op_read.sum"],
                                           k["lts__t_requests_srcunit_tex_op_read.sum"]),
        "lsu_pipe_pct": k["sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"],
        "sm_balance": ratio(k["sm__cycles_active.min"], k["sm__cycles_active.max"]),
        "stalls": [{"reason": s, "pct": v} for s, v in stalls],
        "load_bytes_in_flight_per_thread": per_thread,
        "bytes_in_flight_per_sm": has,
        "bytes_in_flight_needed_per_sm": machine.get("bytes_in_flight_needed_per_sm"),
    }


def torch_runs(ncu, build, chapter, machine, problems=()):
    """The chapter's PyTorch peers (NN/torch_peers.py) on their cases, each profiled like a version:
    what the library a user would call instead does on the same GPU. Needs torch in
    $TUT_SYSTEM_PYTHON."""
    python = os.environ.get("TUT_SYSTEM_PYTHON") or shutil.which("python3")
    script = os.path.join(chapters.ROOT, "common", "tools", "torch_peers.py")
    spec = torch_peers.Spec.of(chapter)
    if spec is None or not spec.peers:
        return []
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"{chapter}: torch is not importable by {python}: no PyTorch rows in the profile")
        return []
    module = torch_peers.RaceModule(torch_peers.RaceModule.path(build, chapter))
    runs = []
    for problem, peers, text in spec.selected(problems):
        case = module.case(problem, text)
        for name, _setup in peers:
            kernels, err = ncu_kernels(ncu, [python, script, "--build", build, "--profile", chapter, problem, name,
                                             "--case", case.name])
            if kernels is None:
                print(f"ncu could not profile {chapter} {problem} {name}:\n{err}")
                continue
            runs.append({"problem": problem, "case": case.name, "version": name, "kind": "peer", "library": "torch",
                         "kernels": [summarize(k, {}, machine) for k in kernels]})
            print(f"{chapter} {problem} {name}: " + ", ".join(f"grid {k['grid']:.0f} x {k['block']:.0f}, DRAM "
                                                            f"{k['dram_pct']:.1f}%" for k in runs[-1]["kernels"]))
    return runs


def run_json(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stdout[-500:]}{proc.stderr[-1500:]}")
    return proc.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--problem", action="append", default=[],
                    help="profile only this problem (repeatable; default: every problem)")
    ap.add_argument("chapters", nargs="*")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    known = [c.name for c in chapters.existing()]
    for ch in args.chapters:
        if ch not in known:
            raise chapters.Failure(f"no chapter '{ch}' (chapters: {', '.join(known)})")
    machine_exe = os.path.join(build, "subprojects", "common", "tut_machine")
    sass_exe = os.path.join(build, "subprojects", "common", "tut_sass")
    if not os.path.isfile(machine_exe):
        raise chapters.Failure(f"{args.build}: not built (./tutorial build)")
    ncu = find_tool("ncu")
    if not ncu:
        print("ncu (Nsight Compute) not found: no profile written")
        return 77
    metrics = METRICS + available(ncu, OPTIONAL)
    proc = subprocess.run([machine_exe], capture_output=True, text=True)
    if proc.returncode == 77:
        print("no CUDA device: no profile written")
        return 77
    if proc.returncode != 0:
        raise SystemExit(f"tut_machine failed: {proc.stderr}")
    machine = json.loads(proc.stdout)
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    for ch in args.chapters or known:
        bench = os.path.join(build, "subprojects", ch, "tut", f"bench_{ch}")
        listing = json.loads(run_json([bench, "--list-json"]))
        unknown = [p for p in args.problem if p not in {q["problem"] for q in listing}]
        if args.chapters and unknown:
            raise chapters.Failure(f"{ch} has no problem '{unknown[0]}'")
        sass = {}
        for line in run_json([sass_exe, bench]).splitlines():
            k = json.loads(line)
            sass[k["mangled"]] = k
        runs = []
        for p in listing:
            if args.problem and p["problem"] not in args.problem:
                continue
            case = p["default_case"]["name"]
            for v in p["versions"]:
                kernels, err = ncu_kernels(ncu, [bench, "--problem", p["problem"], "--version", v["name"], "--profile"],
                                           metrics)
                if kernels is None:
                    print(f"ncu could not profile {ch} {p['problem']} {v['name']}; no profile written:\n{err}")
                    return 77
                runs.append({"problem": p["problem"], "case": case, "version": v["name"], "kind": v["kind"],
                             "kernels": [summarize(k, sass, machine) for k in kernels]})
                shown = ", ".join(f"{kk['name'][:40]}: DRAM {kk['dram_pct']:.1f}%" for kk in runs[-1]["kernels"]
                                  if kk["dram_pct"] is not None)
                print(f"{ch} {p['problem']} {v['name']}: {shown or 'no kernels (a library call ncu does not see)'}")
        runs += torch_runs(ncu, build, ch, machine, args.problem)
        chapters.write_results(build, ch, machine["gpu"], ".profile.json",
                               {"ncu": version, "machine": machine, "runs": runs})
    return 0


if __name__ == "__main__":
    chapters.run_tool(main)
