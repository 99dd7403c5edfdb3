#!/bin/bash
# Draw timing within a budget on the NVIDIA H100 (device tool), results into $OUT. Carry
# `.device` and `.devbin` (stripped release builds: framescope, libframescope_vk.so,
# framescope-testapp), then run:  source .device/setup.sh; bash tests/device/h100-draw-budget.sh
set -u
B=$PWD/.devbin
R=$OUT/results.txt
export XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/driver.txt 2>&1
note() { echo "$*" | tee -a $R; }

run() { # tag, config, app args...
  local tag=$1 cfg=$2; shift 2
  rm -f /tmp/$tag.jsonl
  timeout 300 $B/framescope run --dump /tmp/$tag.jsonl --config "hud=0,counters=0,$cfg" -- \
    $B/framescope-testapp --headless --frame-boundary "$@" > /tmp/$tag.txt 2>&1
  note "$tag ($cfg): rc=$?"
}

# 10 000 draws per frame, 1920x1080, 600 frames; each mode twice, interleaved.
for rep in 1 2; do
  for m in "off:samples=off" "renderpass:samples=renderpass" "draw3:samples=draw" "draw100:samples=draw,sample_budget=100"; do
    run "${m%%:*}-$rep" "${m#*:}" --draws 10000 --frames 600 --width 1920 --height 1080
  done
done
# The known-answer scene, budget vs every draw.
run regions3 "samples=draw" --scene regions --frames 600 --width 1920 --height 1080
run regions100 "samples=draw,sample_budget=100" --scene regions --frames 600 --width 1920 --height 1080

python3 - <<'PY' | tee -a $R
import json
def load(tag):
    return [json.loads(l) for l in open(f"/tmp/{tag}.jsonl") if '"type":"frame"' in l]
def busy(fr):
    v = [f["gpu_busy_ns"] for f in fr[100:] if f["gpu_busy_ns"] is not None]
    return sum(v) / len(v)
for rep in (1, 2):
    b = {m: busy(load(f"{m}-{rep}")) for m in ("off", "renderpass", "draw3", "draw100")}
    print(f"rep {rep}: mean gpu_busy_ns frames 100..600: " + ", ".join(f"{m} {v/1e3:.1f} us" for m, v in b.items()))
    for m in ("renderpass", "draw3", "draw100"):
        print(f"  {m}: {100*(b[m]/b['off']-1):+.2f} % vs samples=off")
    fr = load(f"draw3-{rep}")
    w = [f.get("draw_window") for f in fr]
    counts = sorted(set(x["count"] for x in w if x))
    print(f"  draw3 window counts seen: {counts[:12]} overhead_ns(last)={w[-1] and w[-1]['overhead_ns']}")
    # Frames from frame 60 until every draw position was timed.
    seen = set(); done = None
    for f in fr[60:]:
        x = f.get("draw_window")
        if x:
            seen.update(range(x["first"], min(x["first"] + x["count"], 10000)))
        if len(seen) >= 10000 and done is None:
            done = f["frame"] - 60 + 1
    print(f"  every draw timed within {done} frames after frame 60 (timed positions {len(seen)})")
    print(f"  accounting: every frame draws == 10000: {all(f['draws'] == 10000 for f in fr)}, "
          f"timed == draw samples: {all(f['draws_timed'] == sum(1 for s in f['samples'] if s['scope']=='draw') for f in fr)}")
    s = [json.loads(l) for l in open(f"/tmp/draw3-{rep}.jsonl") if '"type":"summary"' in l]
    print(f"  dropped_samples draw3: {s and s[0]['dropped_samples']}")
# Per-draw means: budget vs every draw, on the regions scene.
def means(tag):
    acc = {}
    for f in load(tag)[100:]:
        for s in f["samples"]:
            if s["scope"] == "draw" and s["gpu_ns"] is not None:
                k = (s["label"], s["draw"])
                acc.setdefault(k, []).append(s["gpu_ns"])
    return {k: sum(v)/len(v) for k, v in acc.items()}
a, b = means("regions3"), means("regions100")
common = [k for k in a if k in b]
rel = sorted(abs(a[k]/b[k]-1) for k in common if b[k] > 0)
print(f"regions: {len(common)} of {len(b)} draw keys timed under the budget; per-draw mean vs budget=100: "
      f"median |diff| {100*rel[len(rel)//2]:.1f} %, p90 {100*rel[int(len(rel)*0.9)]:.1f} %, max {100*rel[-1]:.1f} %")
tot = lambda m: sum(m[k] for k in common)
print(f"regions: sum of per-draw means budget {tot(a)/1e3:.1f} us vs every draw {tot(b)/1e3:.1f} us")
PY
