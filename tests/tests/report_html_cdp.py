"""Drives a `report --html` run page in headless Chromium over the DevTools protocol (its
`--remote-debugging-pipe`: commands on fd 3, replies on fd 4, NUL-separated JSON, so only the
standard library is needed): hovers the frame-time graph at a frame and zooms it around the
stutter. Prints one JSON object for tests/tests/report_html.rs to check.

usage: report_html_cdp.py PAGE PROFILE_DIR X_FRACTION
"""

import json
import os
import subprocess
import sys
import time

page, profile, frac = sys.argv[1], sys.argv[2], float(sys.argv[3])
to_chrome_r, to_chrome_w = os.pipe()
from_chrome_r, from_chrome_w = os.pipe()


def child_fds():
    os.dup2(to_chrome_r, 3)
    os.dup2(from_chrome_w, 4)


chrome = subprocess.Popen(
    ["chromium", "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
     "--remote-debugging-pipe", "--window-size=1400,1000", "--user-data-dir=" + profile, "about:blank"],
    preexec_fn=child_fds, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.close(to_chrome_r)
os.close(from_chrome_w)
buf = b""
next_id = 0
events = []


def send(method, params=None, session=None):
    global next_id, buf
    next_id += 1
    msg = {"id": next_id, "method": method, "params": params or {}}
    if session:
        msg["sessionId"] = session
    os.write(to_chrome_w, json.dumps(msg).encode() + b"\0")
    while True:
        while b"\0" not in buf:
            chunk = os.read(from_chrome_r, 1 << 16)
            if not chunk:
                raise SystemExit("chromium closed the pipe")
            buf += chunk
        raw, buf = buf.split(b"\0", 1)
        reply = json.loads(raw)
        if reply.get("id") == next_id:
            if "error" in reply:
                raise SystemExit(f"{method}: {reply['error']}")
            return reply.get("result", {})
        events.append(reply)


def evaluate(session, expr):
    r = send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session)
    if "exceptionDetails" in r:
        raise SystemExit(f"{expr}: {r['exceptionDetails']}")
    return r["result"].get("value")


try:
    target = send("Target.createTarget", {"url": "file://" + page})["targetId"]
    session = send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    deadline = time.time() + 30
    status = None
    while time.time() < deadline:
        status = evaluate(session, "(document.getElementById('status')||{dataset:{}}).dataset.status || null")
        if status in ("ok", "error"):
            break
        time.sleep(0.1)
    if status != "ok":
        raise SystemExit(f"page status {status}")
    rect = evaluate(session, """(() => {
        const c = document.querySelector('.chart canvas');
        c.scrollIntoView({block: 'center'});
        const r = c.getBoundingClientRect();
        return {left: r.left, top: r.top, width: r.width, height: r.height};
    })()""")

    def chart_state():
        return evaluate(session, """(() => {
            const ch = window.framescope.frameChart;
            const cols = ch.columns[0].filter((c) => c !== null);
            const cc = window.framescope.counterChart;
            const ccols = cc ? cc.columns[0].filter((c) => c !== null) : [];
            return {view: ch.view(), max: Math.max(...cols.map((c) => c[1])), columns: cols.length,
                    counter_view: cc ? cc.view() : null,
                    counter_max: ccols.length ? Math.max(...ccols.map((c) => c[1])) : null};
        })()""")

    # The plot area starts 56 px in and ends 12 px before the right edge (page.js's padding).
    x = rect["left"] + 56 + frac * (rect["width"] - 68)
    y = rect["top"] + rect["height"] / 2
    # The counters' chart shows the GPU load (its select lists the counters by name).
    evaluate(session, """(() => {
        const s = document.querySelector('select[aria-label=counter]');
        if (s) { s.value = 'gpu_util_pct'; s.dispatchEvent(new Event('change')); }
    })()""")
    before = chart_state()
    send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, session)
    tip = evaluate(session, "(() => { const t = document.getElementById('tip'); return t.hidden ? null : t.textContent; })()")
    for _ in range(12):
        send("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": -120}, session)
    after = chart_state()
    print(json.dumps({"tip": tip, "before": before, "after": after}))
finally:
    chrome.kill()
    chrome.wait()
