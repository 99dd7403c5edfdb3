"""Where framescope's CPU time goes on the H100 at 10 000 draws a frame: the headless test app
bare and under framescope with one part added at a time. Run through the device tool after
`source .device/setup.sh` (carry .device and .devbin): python3 tests/device/h100_cpu_parts.py
Writes $OUT/h100-cpu-parts.json."""
import json, os, re, resource, shutil, statistics, subprocess, time

B = os.path.join(os.getcwd(), ".devbin")
OUT = os.environ["OUT"]
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp/fs-rt")
os.makedirs(os.environ["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
LONG, SHORT, REPS = 5000, 1000, 5
# The same four cores for every run (see h100_costs.py).
PIN = ["taskset", "-c", "4-7"] if shutil.which("taskset") else []
DRAWS = ["--draws", "10000", "--width", "1920", "--height", "1080"]
# (name, config or None for bare, dump)
PARTS = [
    ("bare", None, False),
    # The layer loaded with nothing measured: submit, present and command-buffer hooks only
    # (draws go straight to the driver unless counted).
    ("layer only", "gpu_timing=0,samples=off,counters=0", False),
    ("+ GPU timing", "samples=off,counters=0", False),
    ("+ render-pass samples", "counters=0", False),
    ("+ counters (defaults)", "", False),
    ("+ dump", "", True),
    ("+ command counts", "command_counts=1", True),
]


def run(cfg, dump, frames):
    app = [f"{B}/framescope-testapp", "--headless"] + ([] if cfg is None else ["--frame-boundary"])
    app += ["--frames", str(frames)] + DRAWS
    cmd = app
    if cfg is not None:
        cmd = [f"{B}/framescope", "run"] + (["--dump", "/tmp/parts.jsonl"] if dump else []) + ["--config", cfg, "--"] + app
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    p = subprocess.run(PIN + cmd, capture_output=True, text=True, timeout=300)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = re.search(r"testapp-result (\{.*\})", p.stdout + p.stderr)
    r = json.loads(m.group(1)) if m else {}
    return (p.returncode, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            r.get("record_ns"), r.get("thread_cpu_ns"), r.get("thread_instructions"))


res = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
       "gpu_driver": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                    capture_output=True, text=True).stdout.strip(), "parts": {}}
for rep in range(REPS):
    for name, cfg, dump in PARTS:
        rl, wl, cl, recl, tl, il = run(cfg, dump, LONG)
        rs, ws, cs, recs, ts, is_ = run(cfg, dump, SHORT)
        row = res["parts"].setdefault(name, {"cpu_ms": [], "wall_ms": [], "record_us": [], "thread_cpu_ms": [],
                                             "thread_instructions": [], "rc": []})
        row["thread_instructions"].append(il and is_ and (il - is_) / (LONG - SHORT))
        # The app's own thread (framescope's threads excluded).
        row["thread_cpu_ms"].append(tl and ts and (tl - ts) / 1e6 / (LONG - SHORT))
        row["cpu_ms"].append(1e3 * (cl - cs) / (LONG - SHORT))
        row["wall_ms"].append(1e3 * (wl - ws) / (LONG - SHORT))
        # The app's own time recording its command buffers (the draw hooks' cost), per frame.
        row["record_us"].append(recl and recs and (recl - recs) / (LONG - SHORT) / 1e3)
        row["rc"].append(max(rl, rs))
for name, row in res["parts"].items():
    print(f"{name:24} cpu {statistics.median(row['cpu_ms']):.3f} ms/frame  wall {statistics.median(row['wall_ms']):.3f}  "
          f"app thread {statistics.median([x for x in row['thread_cpu_ms'] if x] or [0]):.4f}  "
          f"instructions {[round(x) for x in row['thread_instructions'] if x]}  "
          f"record {[round(x, 1) for x in row['record_us'] if x]} us/frame rc {row['rc']}")
json.dump(res, open(os.path.join(OUT, "h100-cpu-parts.json"), "w"), indent=1)
