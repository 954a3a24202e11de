#!/usr/bin/env python3
"""Tables of experiments/gpu-default/gpu_default.sh (issue 43).

    python3 gpu_default_table.py --csv runs.csv --dir ANALYSIS --md table.md --json table.json

From runs.csv (prog,round,mode,steady_s,wall_s,rc,pos; round 0 is the
warm-up `first_default` run):
  - per program and mode: the steady time over untraced of the same round
    (ratio per round, then the median, its range), the same for the process
    wall time, and beside them the untraced spread (min-max and IQR as % of
    the untraced median);
  - default minus nogpu, in points of the untraced time (per round, then the
    median), and full minus nogpu.
From ANALYSIS/PROG.KIND.{gaps,report,header,footer}.json (KIND: default,
full, first_default; `tracer gaps --json`, `tracer report --json`, the
trace's first and last lines):
  - per program and phase (GPU scope of `tracer gaps`): idle share and busy
    time of default and full, their differences (points; %), the basis of
    each, and whether each phase's verdict (`tracer report`) is determined;
  - per trace: timeline, basis, calibration coverage, and the footer's GPU
    lines (keys naming gpu, cupti, windows or durations), when there are any.
A missing or unreadable file leaves its cells empty.
"""
import argparse
import csv
import json
import os
import re
import statistics as st
from collections import defaultdict

MODE_ORDER = ["untraced", "nogpu", "default", "default_h", "full"]
KINDS = ["default", "full", "first_default"]


def fnum(x):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v == v else None


def read_runs(path):
    """(prog, mode) -> {round: (steady, wall)} of the runs that ended with rc 0 and a STEADY_S; and the failures."""
    ok = defaultdict(dict)
    failed = []
    rows = 0
    if not os.path.exists(path):
        return ok, failed, rows
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows += 1
            try:
                rnd = int(r.get("round") or 0)
            except ValueError:
                continue
            steady, wall = fnum(r.get("steady_s")), fnum(r.get("wall_s"))
            if str(r.get("rc", "")).strip() != "0" or steady is None:
                failed.append({k: r.get(k) for k in ("prog", "round", "mode", "rc", "steady_s", "wall_s")})
                continue
            ok[(r["prog"], r["mode"])][rnd] = (steady, wall)
    return ok, failed, rows


def spread(v):
    """median, min, max, (max-min)/median %, IQR/median %."""
    if not v:
        return None
    m = st.median(v)
    out = {"n": len(v), "median": m, "min": min(v), "max": max(v),
           "range_pct": 100 * (max(v) - min(v)) / m if m else None, "iqr_pct": None}
    if len(v) >= 2 and m:
        q = st.quantiles(v, n=4, method="inclusive")
        out["iqr_pct"] = 100 * (q[2] - q[0]) / m
    return out


def summary(v):
    return {"n": len(v), "median": st.median(v), "min": min(v), "max": max(v)} if v else None


def paired(base, other, idx):
    """Per round where both ran: other/base of element idx (0 steady, 1 wall)."""
    rs = sorted(set(base) & set(other))
    return {r: other[r][idx] / base[r][idx] for r in rs if base[r][idx] and other[r][idx] is not None}


def load(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def gpu_scope(g):
    scopes = (g or {}).get("scopes") or []
    for s in scopes:
        if s.get("kind") == "gpu":
            return s
    return scopes[0] if scopes else None


def basis_of(g, phase=None):
    """The basis label of a phase's figures (a per-phase field if the JSON has one, else the trace's)."""
    stats = (phase or {}).get("stats") or {}
    for obj in (phase or {}, stats):
        for k in ("idle_basis", "basis", "basis_label"):
            v = obj.get(k)
            if isinstance(v, str):
                return v
            if isinstance(v, dict):  # e.g. {"basis": ..., "label": ...}
                return v.get("label") or v.get("basis") or json.dumps(v)
    if stats and stats.get("idle_share") is None and stats.get("idle_share_lower_bound") is not None:
        return "lower_bound"
    return (g or {}).get("idle_basis")  # where calibrated from: the traces table


def phase_rows(g):
    """[(name, phase dict with stats)] of the GPU scope: the whole window first, phases by name (#k for repeats)."""
    s = gpu_scope(g)
    if not s:
        return []
    out = [("(whole window)", {"stats": s.get("overall") or {}})]
    seen = defaultdict(int)
    for p in s.get("phases") or []:
        name = p.get("phase", "?")
        seen[name] += 1
        out.append((name if seen[name] == 1 else f"{name}#{seen[name]}", p))
    return out


def verdicts(rep):
    """phase name (#k for repeats) -> (determined, bound, label)."""
    out = {}
    v = (rep or {}).get("verdict") or {}
    seen = defaultdict(int)
    for p in v.get("phases") or []:
        name = p.get("phase", "?")
        seen[name] += 1
        bound = p.get("bound")
        det = p.get("determined")
        if det is None:
            det = bound is not None and bound != "undetermined"
        out[name if seen[name] == 1 else f"{name}#{seen[name]}"] = (bool(det), bound, p.get("label"))
    if v:
        out["(whole window)"] = (v.get("bound") not in (None, "undetermined"), v.get("bound"),
                                 f"{v.get('label')} (phase {v.get('phase')})")
    return out


FOOTER_KEY = re.compile(r"gpu|cupti|window|durations|library", re.I)


def flat(v, prefix="", out=None, depth=0):
    """Scalars of a JSON value as key=value pairs (lists by their length)."""
    out = [] if out is None else out
    if isinstance(v, dict):
        for k, x in v.items():
            flat(x, f"{prefix}.{k}" if prefix else k, out, depth + 1)
    elif isinstance(v, list):
        out.append(f"{prefix}=[{len(v)}]")
    else:
        out.append(f"{prefix}={v}")
    return out


def footer_gpu(foot):
    """The footer's GPU cost lines: every top-level key naming gpu/cupti/windows/durations."""
    if not isinstance(foot, dict):
        return {}
    return {k: v for k, v in foot.items() if FOOTER_KEY.search(k)}


def trace_info(adir, prog, kind):
    g = load(os.path.join(adir, f"{prog}.{kind}.gaps.json"))
    rep = load(os.path.join(adir, f"{prog}.{kind}.report.json"))
    head = load(os.path.join(adir, f"{prog}.{kind}.header.json"))
    foot = load(os.path.join(adir, f"{prog}.{kind}.footer.json"))
    if foot is not None and foot.get("type") != "footer":
        foot = None  # the last line was not the footer (a cut trace)
    cov = ((g or {}).get("diagnostics") or {}).get("coverage") or (rep or {}).get("calibration_coverage")
    s = gpu_scope(g)
    rows = dict(phase_rows(g))

    def idle(name):
        st_ = (rows.get(name) or {}).get("stats") or {}
        if st_.get("idle_share") is not None:
            return {"share": st_["idle_share"], "lower_bound": False}
        lb = st_.get("idle_share_lower_bound")
        return None if lb is None else {"share": lb, "lower_bound": True}
    return {
        "gaps": g, "report": rep,
        "summary": {
            "gaps_read": g is not None, "report_read": rep is not None,
            "timeline": (g or rep or {}).get("timeline"),
            "idle_basis": (g or rep or {}).get("idle_basis"),
            "calibrated_from": (g or rep or {}).get("calibrated_from"),
            "scope": (s or {}).get("scope"),
            "idle_share_window": idle("(whole window)"),
            "idle_share_steady": idle("steady"),
            "coverage": {k: cov.get(k) for k in ("kernel_launches", "missing_launches", "kernel_ns", "missing_ns")}
            if isinstance(cov, dict) else None,
            "header_gpu": {k: v for k, v in (head or {}).items() if FOOTER_KEY.search(k)},
            "footer_gpu": footer_gpu(foot),
            "footer_found": foot is not None,
            "duration_s": (foot or {}).get("duration_s"),
        },
    }


def pct(x, digits=1):
    return "" if x is None else f"{100 * x:.{digits}f} %"


def num(x, fmt="{:.3f}"):
    return "" if x is None else fmt.format(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--dir", required=True, help="the analysis folder (PROG.KIND.*.json)")
    ap.add_argument("--md", required=True)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()

    ok, failed, nrows = read_runs(a.csv)
    progs = []
    for (p, _m) in ok:
        if p not in progs:
            progs.append(p)
    for f in failed:
        if f["prog"] not in progs:
            progs.append(f["prog"])
    if os.path.isdir(a.dir):
        for name in sorted(os.listdir(a.dir)):
            p = name.split(".")[0]
            if name.endswith(".json") and p not in progs:
                progs.append(p)
    modes = [m for m in MODE_ORDER if any((p, m) in ok for p in progs)]
    modes += sorted({m for (_p, m) in ok if m not in modes and m != "first_default"})

    md = ["# GPU by default: overhead and idle accuracy", ""]
    md.append(f"{nrows} runs in {os.path.basename(a.csv)}, {len(failed)} failed or without STEADY_S.")
    md.append("")
    md.append("## Overhead: steady time over untraced, paired per round")
    md.append("")
    md.append("Ratio per round (mode / untraced of the same round), then the median over rounds; wall: the "
              "process's whole run (start-up included). Untraced spread: (max − min) and IQR of the untraced "
              "steady times, as % of their median.")
    md.append("")
    md.append("| program | mode | rounds | steady median s | steady / untraced | range | wall / untraced | "
              "untraced spread (min-max) | untraced IQR |")
    md.append("|---|---|---|---|---|---|---|---|---|")
    out = {"runs": nrows, "failed": failed, "programs": {}}
    for p in progs:
        base = {r: v for r, v in ok.get((p, "untraced"), {}).items() if r > 0}
        sp = spread([v[0] for v in base.values()])
        po = {"untraced_spread": sp, "modes": {}, "differences_points": {}, "phases": [], "traces": {}}
        per_round_ratio = {}
        for m in modes:
            runs = {r: v for r, v in ok.get((p, m), {}).items() if r > 0}
            if not runs:
                continue
            rs = paired(base, runs, 0)
            rw = paired(base, runs, 1)
            per_round_ratio[m] = rs
            s_sum = summary([v[0] for v in runs.values()])
            r_sum = summary(list(rs.values()))
            w_sum = summary(list(rw.values()))
            po["modes"][m] = {"steady": s_sum, "ratio": r_sum, "wall_ratio": w_sum,
                              "ratio_by_round": rs, "wall_ratio_by_round": rw,
                              "wall_median_s": st.median([v[1] for v in runs.values()])}
            md.append(
                "| " + " | ".join([
                    p, m, str(len(runs)),
                    num(s_sum["median"] if s_sum else None, "{:.4f}"),
                    num(r_sum["median"] if r_sum else None),
                    f"{r_sum['min']:.3f}–{r_sum['max']:.3f}" if r_sum else "",
                    num(w_sum["median"] if w_sum else None),
                    f"{sp['range_pct']:.1f} %" if sp and sp["range_pct"] is not None else "",
                    f"{sp['iqr_pct']:.1f} %" if sp and sp["iqr_pct"] is not None else "",
                ]) + " |")
        for a_m, b_m in (("default", "nogpu"), ("full", "nogpu"), ("full", "default"), ("default_h", "nogpu"),
                         ("default_h", "default")):
            ra, rb = per_round_ratio.get(a_m), per_round_ratio.get(b_m)
            if not ra or not rb:
                continue
            d = [100 * (ra[r] - rb[r]) for r in sorted(set(ra) & set(rb))]
            if d:
                po["differences_points"][f"{a_m}-{b_m}"] = summary(d)
        out["programs"][p] = po
    md.append("")
    md.append("Differences in points of the untraced steady time (per round: mode/untraced − other/untraced, × 100; "
              "median and range over rounds):")
    md.append("")
    md.append("| program | default − nogpu | range | full − nogpu | full − default |")
    md.append("|---|---|---|---|---|")
    for p in progs:
        dp = out["programs"][p]["differences_points"]
        g = lambda k: f"{dp[k]['median']:+.1f}" if k in dp else ""  # noqa: E731
        rng = f"{dp['default-nogpu']['min']:+.1f} … {dp['default-nogpu']['max']:+.1f} ({dp['default-nogpu']['n']} rounds)" \
            if "default-nogpu" in dp else ""
        md.append(f"| {p} | {g('default-nogpu')} | {rng} | {g('full-nogpu')} | {g('full-default')} |")
    if any("default_h-nogpu" in out["programs"][p]["differences_points"] for p in progs):
        md.append("")
        md.append("`default_h` (gpu_default.sh's DEFAULT_H_ARGS, a budget horizon):")
        md.append("")
        md.append("| program | default_h − nogpu | range | default_h − default | range |")
        md.append("|---|---|---|---|---|")
        for p in progs:
            dp = out["programs"][p]["differences_points"]
            f = lambda k: (f"{dp[k]['median']:+.1f}", f"{dp[k]['min']:+.1f} … {dp[k]['max']:+.1f} ({dp[k]['n']} rounds)") \
                if k in dp else ("", "")  # noqa: E731
            a, b = f("default_h-nogpu"), f("default_h-default")
            md.append(f"| {p} | {a[0]} | {a[1]} | {b[0]} | {b[1]} |")

    md.append("")
    md.append("## Idle share and busy time per phase: default against full")
    md.append("")
    md.append("The GPU scope of `tracer gaps --json` on the last default and the last full run of each program "
              "(two different processes); Δ idle in points (default − full), Δ busy in % of full. Basis: the "
              "figures' `idle_basis` (per phase where the JSON has one). Verdict: `tracer report --json`'s "
              "per-phase verdict, determined or not.")
    md.append("")
    md.append("| program | phase | idle default | idle full | Δ idle (points) | busy default ms | busy full ms | "
              "Δ busy | basis default | basis full | verdict default | verdict full |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p in progs:
        info = {k: trace_info(a.dir, p, k) for k in KINDS}
        out["programs"].setdefault(p, {"phases": [], "traces": {}})
        out["programs"][p]["traces"] = {k: v["summary"] for k, v in info.items()}
        gd, gf = info["default"]["gaps"], info["full"]["gaps"]
        vd, vf = verdicts(info["default"]["report"]), verdicts(info["full"]["report"])
        rd, rf = dict(phase_rows(gd)), dict(phase_rows(gf))
        names = list(rd) + [n for n in rf if n not in rd]
        for name in names:
            sd, sf = (rd.get(name) or {}).get("stats") or {}, (rf.get(name) or {}).get("stats") or {}

            def idle(s):
                if s.get("idle_share") is not None:
                    return s["idle_share"], False
                if s.get("idle_share_lower_bound") is not None:
                    return s["idle_share_lower_bound"], True
                return None, False

            (id_, lbd), (if_, lbf) = idle(sd), idle(sf)
            bd, bf = sd.get("busy_ns"), sf.get("busy_ns")
            row = {
                "phase": name,
                "default": {"idle_share": id_, "idle_is_lower_bound": lbd, "busy_ns": bd,
                            "window_ns": sd.get("window_ns"), "basis": basis_of(gd, rd.get(name)) if name in rd else None,
                            "verdict": vd.get(name)},
                "full": {"idle_share": if_, "idle_is_lower_bound": lbf, "busy_ns": bf,
                         "window_ns": sf.get("window_ns"), "basis": basis_of(gf, rf.get(name)) if name in rf else None,
                         "verdict": vf.get(name)},
                "idle_diff_points": 100 * (id_ - if_) if id_ is not None and if_ is not None and not lbd and not lbf
                else None,
                "busy_diff_pct": 100 * (bd / bf - 1) if bd is not None and bf else None,
            }
            out["programs"][p]["phases"].append(row)

            def ver(v):
                if not v:
                    return ""
                return ("determined: " if v[0] else "undetermined") + (v[2] or "" if v[0] else "")

            md.append("| " + " | ".join([
                p, name,
                ("≥ " if lbd else "") + pct(id_, 2) if id_ is not None else "",
                ("≥ " if lbf else "") + pct(if_, 2) if if_ is not None else "",
                num(row["idle_diff_points"], "{:+.2f}"),
                num(bd / 1e6 if bd is not None else None, "{:.2f}"),
                num(bf / 1e6 if bf is not None else None, "{:.2f}"),
                num(row["busy_diff_pct"], "{:+.1f} %"),
                str(row["default"]["basis"] or ""), str(row["full"]["basis"] or ""),
                ver(vd.get(name)), ver(vf.get(name)),
            ]) + " |")

    md.append("")
    md.append("## The traces")
    md.append("")
    md.append("| program | trace | timeline | basis | idle (window) | idle (steady) | launches missing from the "
              "calibration | GPU lines of the footer |")
    md.append("|---|---|---|---|---|---|---|---|")
    for p in progs:
        for k in KINDS:
            s = out["programs"][p]["traces"].get(k) or {}
            if not (s.get("gaps_read") or s.get("report_read") or s.get("footer_found")):
                md.append(f"| {p} | {k} | (no analysis) | | | | | |")
                continue
            cov = s.get("coverage") or {}
            covs = f"{cov.get('missing_launches')} of {cov.get('kernel_launches')}" if cov else ""
            fg = s.get("footer_gpu") or {}
            if fg:
                fl = "; ".join(f"{key}: " + ", ".join(flat(v))[:400] for key, v in fg.items())
            else:
                fl = "none" if s.get("footer_found") else "(no footer)"
            basis = s.get("idle_basis") or ""
            if s.get("calibrated_from"):
                basis += f" ({s['calibrated_from']})"
            def sh(x):
                return "" if not x else ("≥ " if x["lower_bound"] else "") + pct(x["share"], 2)

            md.append(f"| {p} | {k} | {s.get('timeline') or ''} | {basis} | {sh(s.get('idle_share_window'))} | "
                      f"{sh(s.get('idle_share_steady'))} | {covs} | {fl.replace('|', '/')} |")
    if failed:
        md.append("")
        md.append("## Failed runs")
        md.append("")
        for f in failed:
            md.append(f"- {f['prog']} round {f['round']} {f['mode']}: rc {f['rc']}, steady '{f['steady_s']}'")
    text = "\n".join(md) + "\n"
    with open(a.md, "w") as f:
        f.write(text)
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1, default=str)
    print(text)


if __name__ == "__main__":
    main()
