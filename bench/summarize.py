#!/usr/bin/python3
"""Turns bench/run.sh's raw results into one table: printed, and written as bench/RESULTS.md.

    summarize.py RESULTS_TSV INFO_FILE RESULTS_MD

Medians over the runs of each workload and mode. Slowdown is median(mode) / median(baseline);
the overhead ratio is (memledger slowdown - 1) / (heaptrack slowdown - 1): below 1 memledger
costs less than heaptrack. Only ratios from one run of this script are comparable (the machine
is shared)."""
import csv
import re
import statistics
import sys

WORKLOADS = ["malloc_storm", "mt_storm", "mt_paced", "py_dict", "sqlite_insert", "torch_mlp"]
# Workloads that make their events at a fixed pace: the baseline is the pace, so a slowdown
# says whether a profiler kept it, and the overhead ratio is no target.
PACED = {"mt_paced"}
# Workloads whose recorder time is events, not new stacks or the end's writing: the 10M
# events/s capacity target is judged on these (the storms make 20M events each).
EVENT_BOUND = {"malloc_storm", "mt_storm", "mt_paced"}


def med(rows, key):
    vals = [float(r[key]) for r in rows if r.get(key) not in (None, "", "-1")]
    return statistics.median(vals) if vals else None


def drain_capacity(rows):
    """Median over the runs of events per CPU-second of the recorder's draining thread; None when
    no run's recording has recorder_cpu_ns (recordings made before the recorder wrote it)."""
    vals = [float(r["events"]) / (float(r["recorder_cpu_ns"]) / 1e9) for r in rows
            if r.get("events") and r.get("recorder_cpu_ns") and float(r["recorder_cpu_ns"]) > 0]
    return statistics.median(vals) if vals else None


def report_cell(rows, timeout):
    """Median reporter time over the runs where it succeeded; otherwise why it did not."""
    ok = [r for r in rows if r.get("report_status") == "0"]
    if ok or not rows:
        return fmt_s(med(ok, "report_s"))
    status = rows[-1].get("report_status", "")
    if status in ("124", "137", "143", "killed"):
        return f"> {timeout} (timed out)"
    return f"failed (exit {status})"


def fmt_s(v):
    return "n/a" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.1f}")


def fmt_x(v):
    return "" if v is None else f" ({v:.1f}×)"


def fmt_mb(v, unit=1):  # v in bytes (unit=1) or KiB (unit=1024)
    if v is None:
        return "n/a"
    b = v * unit
    return f"{b / 1e6:.1f} MB" if b >= 1e6 else f"{b / 1e3:.0f} kB"


def fmt_rate(v):
    if v is None:
        return "n/a"
    return f"{v / 1e6:.2f} M/s" if v >= 1e6 else f"{v / 1e3:.0f} k/s"


def verdict(ok, text):
    return f"{'met' if ok else 'NOT MET'}: {text}"


def target_line(w, ratio, ht_size, ml_size, wait, report_s, capacity, nproc, times):
    parts = []
    if ratio is not None and w not in PACED:
        parts.append(verdict(ratio <= 0.3, f"overhead ratio {ratio:.2f} (≤ 0.3)"))
        if w == "malloc_storm":
            parts.append(verdict(ratio <= 0.5, f"overhead ratio {ratio:.2f} (issue 2: ≤ 0.5)"))
    if ht_size and ml_size:
        parts.append(verdict(ml_size <= ht_size, f"size {fmt_mb(ml_size)} vs heaptrack {fmt_mb(ht_size)}"))
    if wait is not None:
        text = f"program waited {wait / 1e6:.1f} ms for ring space"
        # mt_storm's 4 threads make events as fast as they can: with fewer cores than threads +
        # the recorder, the recorder gets a share of a core however fast it drains.
        if w == "mt_storm" and wait > 0 and capacity is not None and nproc is not None and nproc < 5:
            text += f" (4 program threads and the recorder share {nproc} vCPUs)"
        parts.append(verdict(wait == 0, text))
    if capacity is not None and w in EVENT_BOUND:
        parts.append(verdict(capacity >= 10e6, f"recorder drains {fmt_rate(capacity)} per CPU-second (≥ 10 M/s)"))
    elif capacity is not None:
        parts.append(f"recorder drains {fmt_rate(capacity)} per CPU-second (no target: its program "
                     f"makes fewer events than that, and the recorder's time also goes to new stacks "
                     f"and the end's writing; waits say whether it kept up)")
    if w == "malloc_storm" and report_s is not None:
        parts.append(verdict(report_s < 1.0, f"report {report_s:.3f} s on 10M allocations (< 1 s)"))
    name = w
    if w in PACED:
        base, ht, ml = (fmt_s(t) for t in times)
        name += (f" (paced; the overhead ratio is no target: the baseline {base} s is the pace, and "
                 f"heaptrack {ht} s / memledger {ml} s show whether each profiler kept it)")
    return f"- {name}: " + "; ".join(parts) if parts else f"- {name}: n/a"


def main(tsv, info_path, md_path):
    rows = list(csv.DictReader(open(tsv), delimiter="\t"))
    info = {}
    for line in open(info_path):
        key, _, value = line.rstrip("\n").partition("=")
        info[key] = value
    ht_na, ml_na = info.get("heaptrack_na", ""), info.get("memledger_na", "")
    nproc = re.match(r"nproc (\d+)", info.get("machine", ""))
    nproc = int(nproc.group(1)) if nproc else None

    header = ["workload", "baseline s", "heaptrack s (slowdown)", "memledger s (slowdown)",
              "overhead ratio ml/ht", "trace size ht / ml", "report s ht / ml",
              "recorder peak RSS ht / ml", "ml events/s", "ml drain capacity", "ml wait_ns"]
    table = [header]
    notes = []
    targets = []  # lines of the "Targets" section: each one met, or the gap measured
    seen = [w for w in WORKLOADS if any(r["workload"] == w for r in rows)]
    for w in WORKLOADS:
        if info.get(f"skip_{w}"):
            table.append([w] + ["skipped"] + [""] * (len(header) - 2))
            notes.append(f"{w}: skipped ({info[f'skip_{w}']})")
    for w in seen:
        by = {m: [r for r in rows if r["workload"] == w and r["mode"] == m]
              for m in ("base", "heaptrack", "memledger")}
        base = med(by["base"], "wall_s")
        ht = med(by["heaptrack"], "wall_s")
        ml = med(by["memledger"], "wall_s")
        ht_x = ht / base if ht is not None and base else None
        ml_x = ml / base if ml is not None and base else None
        ratio = ((ml_x - 1) / (ht_x - 1)) if ml_x is not None and ht_x and ht_x > 1 else None
        events = med(by["memledger"], "events")
        wait = med(by["memledger"], "wait_ns")
        capacity = drain_capacity(by["memledger"])
        ml_cell = fmt_s(ml) + fmt_x(ml_x)
        if ml is None:
            why = ml_na or info.get(f"fail_{w}_memledger", "no successful run")
            ml_cell = "n/a"
            notes.append(f"{w}: memledger: n/a ({why})")
        ht_cell = fmt_s(ht) + fmt_x(ht_x)
        if ht is None:
            why = ht_na or info.get(f"fail_{w}_heaptrack", "no successful run")
            ht_cell = "n/a"
            notes.append(f"{w}: heaptrack: n/a ({why})")
        table.append([
            w,
            fmt_s(base),
            ht_cell,
            ml_cell,
            "n/a" if ratio is None else f"{ratio:.2f}" + (" (no target)" if w in PACED else ""),
            f"{fmt_mb(med(by['heaptrack'], 'size_bytes'))} / {fmt_mb(med(by['memledger'], 'size_bytes'))}",
            f"{report_cell(by['heaptrack'], info.get('report_timeout', '?'))} / "
            f"{report_cell(by['memledger'], info.get('report_timeout', '?'))}",
            f"{fmt_mb(med(by['heaptrack'], 'recorder_kb'), 1024)} / "
            f"{fmt_mb(med(by['memledger'], 'recorder_kb'), 1024)}",
            fmt_rate(events / ml) if events is not None and ml else "n/a",
            fmt_rate(capacity),
            "n/a" if wait is None else f"{wait / 1e6:.1f} ms",
        ])
        targets.append(target_line(w, ratio, med(by['heaptrack'], 'size_bytes'),
                                   med(by['memledger'], 'size_bytes'), wait,
                                   med(by['memledger'], 'report_s'), capacity, nproc,
                                   (base, ht, ml)))
        for mode in ("base", "heaptrack", "memledger"):
            if info.get(f"fail_{w}_{mode}") and not (mode == "memledger" and ml is None) \
                    and not (mode == "heaptrack" and ht is None):
                notes.append(f"{w}: a {mode} run failed ({info[f'fail_{w}_{mode}']})")

    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(row)) + " |" for row in table]
    lines.insert(1, "|" + "|".join("-" * (wd + 2) for wd in widths) + "|")
    text = "\n".join(lines)
    print(text)
    for n in notes:
        print(n)
    print("\nTargets:")
    for t in targets:
        print(t)

    md = [
        "# memledger benchmarks",
        "",
        "Generated by `bench/run.sh`; do not edit by hand (rerun the script).",
        "",
        f"- date: {info.get('date', '?')}",
        f"- machine: {info.get('machine', '?')}. The cores are shared with other work (several "
        "engineers building at once), so absolute times are noisy: compare the ratios within this "
        "one run, not across runs. Load average when the run started: "
        f"{info.get('load', '?')}.",
        f"- tools: {info.get('heaptrack', '?')}; {info.get('memledger', '?')}; "
        f"checkout {info.get('git', '?')}",
        f"- command: `{info.get('command', '?')}` ({info.get('runs', '?')} run(s) per mode, medians)",
        "",
        text,
        "",
    ]
    if notes:
        md += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    md += [
        "Columns:",
        "",
        "- times are wall clock of the whole command, end to end: heaptrack's includes "
        "heaptrack_interpret and its compressor (its script waits for both); memledger's "
        "(`memledger record -o FILE -- PROGRAM`) includes draining, writing and symbolizing.",
        "- slowdown = profiled time / baseline time; overhead ratio = (memledger slowdown − 1) / "
        "(heaptrack slowdown − 1): below 1 memledger adds less time than heaptrack.",
        "- trace size: heaptrack's compressed trace (.zst/.gz) vs memledger's recording as `record` "
        "leaves it (SQLite, zstd-compressed once complete).",
        "- report s: `heaptrack_print FILE` vs `memledger report FILE`, output discarded; each "
        f"reporter is stopped after {info.get('report_timeout', '?')} s and a run after "
        f"{info.get('run_timeout', '?')} s (BENCH_REPORT_TIMEOUT, BENCH_RUN_TIMEOUT).",
        "- recorder peak RSS: VmHWM of heaptrack_interpret vs of the `memledger record` process, "
        "read at their exit through a ptrace exit stop (bench/tools/measure.c); the traced "
        "program's own memory is not in it.",
        "- ml events/s: allocations + frees in the recording (sum over `sites`) per second of "
        "memledger's end-to-end time; ml wait_ns: meta `wait_ns`, the total time the program's "
        "threads waited for ring space.",
        "- ml drain capacity: the same events per second of CPU time of the recorder's draining "
        "thread (meta `recorder_cpu_ns`: draining, pairing, aggregating and writing, from the "
        "start until the program's last process closed; symbolizing is not in it), i.e. how fast "
        "the recorder drains when it has a core. It does not depend on how the shared cores are "
        "divided between the program and the recorder; ml wait_ns says whether the recorder got "
        "enough of them. n/a for a recording without `recorder_cpu_ns`.",
        "- heaptrack runs from a copy of its script with its GUI auto-launch disabled and its "
        "interpreter started under the measuring tool (bench/lib.sh, heaptrack_setup).",
        "",
        "Workloads (bench/workloads/): malloc_storm: 10M malloc/free pairs from 4 sites at stack "
        "depths 10–20, one thread; mt_storm: the same over 4 threads, as fast as they go; mt_paced: "
        "the same over 4 threads paced to 10M events/s in total (2 s unprofiled; each thread sleeps "
        "when ahead of its schedule, never when behind): its times show whether each profiler "
        "keeps that pace, so its overhead ratio is no target; py_dict: /usr/bin/python3 "
        "with PYTHONMALLOC=malloc building a 1M-entry dict; sqlite_insert: the sqlite3 shell "
        "inserting and indexing 300k rows in memory; torch_mlp: a small PyTorch CPU MLP training "
        "loop (one thread).",
        "",
        "## Targets (issue 2: recording overhead at most half of heaptrack's on the malloc storm; "
        "issue 6: at most 0.3 of heaptrack's on every workload but the paced one, a recording no "
        "larger than heaptrack's trace, no waiting for ring space, the recorder draining at least "
        "10M events/s per CPU-second on the storms (and on mt_paced, 10M events/s without the program waiting), "
        "`memledger report` under 1 s on the 10^7-allocation storm)",
        "",
    ] + targets + [""]
    # bench/python_overhead.sh writes its own section after PYTHON_MARK: keep it.
    kept = ""
    try:
        old = open(md_path).read()
        if PYTHON_MARK in old:
            kept = "\n" + old[old.index(PYTHON_MARK):]
    except OSError:
        pass
    with open(md_path, "w") as f:
        f.write("\n".join(md) + kept)


PYTHON_MARK = "<!-- bench/python_overhead.sh writes from here on -->"


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: summarize.py RESULTS_TSV INFO_FILE RESULTS_MD")
    main(*sys.argv[1:])
