"""Analysis for tests/device/h100-rotation.sh: per-pass statistics means with rotation against
every frame, and driver counters through the test double."""
import json
import sys
from collections import defaultdict

KEYS = ["ia_vertices", "ia_primitives", "vs_invocations", "clipping_invocations",
        "clipping_primitives", "fs_invocations", "cs_invocations"]
# The regions scene: (draws, vertices per draw) per pass.
KNOWN = {"Frame/Shadows": (10, 300), "Frame/Main": (100, 36), "Frame/Post": (1, 3)}


def frames(path):
    out = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("type") == "frame":
                out.append(r)
    return out


def pass_means(path):
    sums = defaultdict(lambda: [0] * len(KEYS))
    n = defaultdict(int)
    carried = 0
    fs = frames(path)
    for f in fs[2:]:
        had = False
        for s in f["samples"]:
            if s["scope"] != "renderpass" or "stats" not in s:
                continue
            had = True
            n[s["label"]] += 1
            for i, k in enumerate(KEYS):
                sums[s["label"]][i] += s["stats"][k]
        carried += had
    return {l: [v / n[l] for v in sums[l]] for l in sums}, dict(n), carried, len(fs)


def stats(rot, every):
    a, na, ca, fa = pass_means(rot)
    b, nb, cb, fb = pass_means(every)
    print(f"rotated: {fa} frames, {ca} carried statistics; every frame: {fb} frames, {cb} carried")
    same = True
    for label in sorted(set(a) | set(b)):
        ra, rb = a.get(label), b.get(label)
        print(f"  {label:<16} rotated ({na.get(label, 0)} passes) {ra}")
        print(f"  {'':<16} every   ({nb.get(label, 0)} passes) {rb}")
        if ra != rb:
            same = False
        d, per = KNOWN.get(label, (None, None))
        if d is not None and ra is not None:
            print(f"  {'':<16} known ia_vertices {d * per}: {'yes' if ra[0] == d * per else 'NO'}")
    print("per-pass means equal:", "yes" if same else "NO")


def driver(path):
    fs = frames(path)
    groups = defaultdict(int)
    bad = 0
    for f in fs:
        for e in f.get("driver_counters", []):
            groups[e["group"]] += 1
        for s in f["samples"]:
            dc = s.get("driver_counters")
            if s["scope"] != "renderpass" or not dc or s["overwritten"]:
                continue
            d, per = KNOWN[s["label"]]
            want = {"Draws": d, "Vertices": d * per, "Vertices per draw": per, "Draws x 1000": d * 1000}
            for name, v in dc["counters"].items():
                if v != want[name]:
                    bad += 1
                    if bad < 5:
                        print("  mismatch", f["frame"], s["label"], name, v, want[name])
    print(f"{len(fs)} frames; frames per group {dict(groups)}; per-pass values off the known work: {bad}")


if __name__ == "__main__":
    if sys.argv[1] == "stats":
        stats(sys.argv[2], sys.argv[3])
    else:
        driver(sys.argv[2])
