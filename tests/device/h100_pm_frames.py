#!/usr/bin/env python3
"""Reads the dumps of tests/device/h100-pm-frames.sh and prints what issue "NVIDIA hardware
counters per frame and per pass" asks to be verified on the H100.

  h100_pm_frames.py load DUMP      per-frame graphics active against GPM over the same seconds
  h100_pm_frames.py idle DUMP      per-frame values of an idle app
  h100_pm_frames.py passes DUMP    per-pass values: pixel-heavy against vertex-only pass
  h100_pm_frames.py gl DUMP        per-frame values of a GL app
  h100_pm_frames.py fps DUMP...    mean CPU frame time of each dump (frames after the first second)
"""
import json
import sys

ACTIVE = "pm_graphics_active_pct"


def read(path):
    lines = [json.loads(l) for l in open(path)]
    frames = [l for l in lines if l.get("type") == "frame"]
    summary = [l for l in lines if l.get("type") == "summary"]
    return lines[0], frames, summary[0] if summary else None


def after_first_second(frames):
    t0 = frames[0]["t_ns"]
    return [f for f in frames if f["t_ns"] - t0 > 1e9]


def over(f):
    return (f.get("attribution") or {}).get("pm", {}).get("over")


def mean(v):
    return sum(v) / len(v) if v else float("nan")


def interval_active(f):
    iv = (f.get("attribution") or {}).get("pm", {}).get("interval")
    return iv["counters"].get(ACTIVE) if iv else None


def per_frame(frames, label):
    late = after_first_second(frames)
    with_value = [f for f in late if f["counters"].get(ACTIVE) is not None]
    kinds = {}
    for f in late:
        kinds[over(f)] = kinds.get(over(f), 0) + 1
    missing = {}
    for f in late:
        m = (f.get("attribution") or {}).get("pm", {}).get("missing")
        if m:
            missing[m] = missing.get(m, 0) + 1
    share = len(with_value) / max(len(late), 1)
    print(f"{label}: {len(frames)} frames, {len(late)} after the first second; "
          f"with {ACTIVE}: {len(with_value)} ({share:.1%}); attributed over: {kinds}")
    if missing:
        print(f"  missing: {missing}")
    return late, with_value, share


def load(path):
    h, frames, s = read(path)
    late, v, share = per_frame(frames, "load")
    spans = [(f["counters"][ACTIVE], f["gpu_end_ns"] - f["gpu_begin_ns"]) for f in v
             if over(f) == "gpu_span"]
    print(f"  per-frame graphics active over each frame's GPU span: mean {mean([a for a, _ in spans]):.2f} %")
    wall = late[-1]["t_ns"] - late[0]["t_ns"] + (late[0]["cpu_frame_ns"] or 0)
    active_ns = sum(a / 100 * d for a, d in spans)
    gpm = [f["counters"].get("gpm_graphics_util_pct") for f in late]
    gpm = [x for x in gpm if x is not None]
    weighted = 100 * active_ns / wall
    print(f"  graphics active time inside the frames' GPU spans / wall time: {weighted:.2f} % "
          f"over {wall / 1e9:.2f} s; GPM graphics activity over the same frames: mean {mean(gpm):.2f} % "
          f"({len(gpm)} frames); difference {weighted - mean(gpm):+.2f} points")
    busy = sum(d for _, d in spans)
    print(f"  GPU span time / wall time: {100 * busy / wall:.2f} %")
    iv = [interval_active(f) for f in late]
    iv = [x for x in iv if x is not None]
    print(f"  per-frame graphics active over each frame's CPU interval: {len(iv)} frames, mean {mean(iv):.2f} %; "
          f"GPM {mean(gpm):.2f} %; difference {mean(iv) - mean(gpm):+.2f} points; ok (within 5): {abs(mean(iv) - mean(gpm)) <= 5}")
    for n in ("pm_sm_active_pct", "pm_sm_issue_pct", "pm_ps_warps_pct", "pm_cs_warps_pct", "pm_dram_bw_pct"):
        print(f"  {n:22s} per-frame mean {mean([f['counters'][n] for f in v if f['counters'].get(n) is not None]):.2f}")
    print(f"  ok: values in >= 95 % of frames: {share >= 0.95}; within 5 points of GPM: {abs(weighted - mean(gpm)) <= 5}")


def idle(path):
    h, frames, s = read(path)
    late, v, share = per_frame(frames, "idle")
    vals = [f["counters"][ACTIVE] for f in v]
    spans = [f["gpu_end_ns"] - f["gpu_begin_ns"] for f in v if over(f) == "gpu_span"]
    print(f"  per-frame graphics active over each frame's GPU span: mean {mean(vals):.3f} %, "
          f"max {max(vals) if vals else float('nan'):.3f} %; GPU spans mean {mean(spans) / 1e3:.1f} us, "
          f"shorter than one 1 ms sample, so a frame gets the value of the sample around it")
    wall = late[-1]["t_ns"] - late[0]["t_ns"] + (late[0]["cpu_frame_ns"] or 0)
    active_ns = sum(f["counters"][ACTIVE] / 100 * (f["gpu_end_ns"] - f["gpu_begin_ns"]) for f in v
                    if over(f) == "gpu_span")
    print(f"  graphics active time inside the frames' GPU spans / wall time: {100 * active_ns / wall:.4f} %")
    iv = [x for x in (interval_active(f) for f in late) if x is not None]
    print(f"  per-frame graphics active over each frame's CPU interval: {len(iv)} frames, mean {mean(iv):.3f} %, "
          f"max {max(iv) if iv else float('nan'):.3f} %; ok (< 1 %): {mean(iv) < 1}")


def passes(path):
    h, frames, s = read(path)
    late, v, share = per_frame(frames, "passes")
    by = {"Pixels": [], "Vertices": []}
    frames_checked = 0
    within = 0
    worst = 0.0
    for f in late:
        own = [x for x in f["samples"] if x.get("counters") and x["scope"] == "renderpass"]
        named = {}
        for x in f["samples"]:
            if x["scope"] == "label" and x.get("counters"):
                for k in by:
                    if x["label"].endswith("/" + k) or x["label"] == k:
                        named[k] = x
        # Without label samples the two rendering instances are Pixels, then Vertices.
        if len(named) < 2 and len(own) == 2:
            named = {"Pixels": own[0], "Vertices": own[1]}
        for k, x in named.items():
            by[k].append(x)
        if len(own) >= 2 and over(f) == "gpu_span" and f["counters"].get(ACTIVE) is not None:
            frame_active = f["counters"][ACTIVE] / 100 * (f["gpu_end_ns"] - f["gpu_begin_ns"])
            sum_passes = sum(x["counters"][ACTIVE] / 100 * x["gpu_ns"] for x in own
                             if x["counters"].get(ACTIVE) is not None)
            frames_checked += 1
            ratio = sum_passes / frame_active if frame_active else float("inf")
            worst = max(worst, ratio)
            if ratio <= 1.0 + 1e-6:
                within += 1
    for k, xs in by.items():
        if not xs:
            print(f"  {k}: no sample with its own counters")
            continue
        print(f"  {k:8s} {len(xs)} samples with own counters, GPU time mean {mean([x['gpu_ns'] for x in xs]) / 1e6:.2f} ms; "
              + ", ".join(f"{n} {mean([x['counters'][n] for x in xs if x['counters'].get(n) is not None]):.2f}"
                          for n in (ACTIVE, "pm_ps_warps_pct", "pm_sm_active_pct", "pm_sm_issue_pct", "pm_dram_bw_pct")))
    if by["Pixels"] and by["Vertices"]:
        p = mean([x["counters"]["pm_ps_warps_pct"] for x in by["Pixels"]])
        q = mean([x["counters"]["pm_ps_warps_pct"] for x in by["Vertices"]])
        print(f"  pixel warps: Pixels {p:.2f} % against Vertices {q:.2f} % ({p / q if q else float('inf'):.1f}x)")
    print(f"  sum over the passes of active time <= the frame's: {within}/{frames_checked} frames "
          f"(largest sum/frame {worst:.4f})")


def gl(path):
    h, frames, s = read(path)
    late, v, share = per_frame(frames, "gl")
    iv = [x for x in (interval_active(f) for f in late) if x is not None]
    gpm = [f["counters"].get("gpm_graphics_util_pct") for f in late]
    gpm = [x for x in gpm if x is not None]
    print(f"  per-frame graphics active mean {mean([f['counters'][ACTIVE] for f in v]):.2f} % over the GPU spans, "
          f"{mean(iv):.2f} % over the CPU intervals ({len(iv)} frames; GPM {mean(gpm):.2f} %); "
          f"ok (>= 95 %): {share >= 0.95}")


def fps(paths):
    for p in paths:
        h, frames, s = read(p)
        late = after_first_second(frames)
        ft = [f["cpu_frame_ns"] for f in late if f["cpu_frame_ns"]]
        m = mean(ft)
        print(f"  {p}: {len(late)} frames, mean frame {m / 1e6:.3f} ms = {1e9 / m:.1f} fps")


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    {"load": lambda: load(args[0]), "idle": lambda: idle(args[0]), "passes": lambda: passes(args[0]),
     "gl": lambda: gl(args[0]), "fps": lambda: fps(args)}[mode]()
