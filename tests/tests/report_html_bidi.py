"""Opens a `report --html` page in headless Firefox over WebDriver BiDi (the W3C protocol
Firefox speaks on `--remote-debugging-port`; its CDP support is gone), waits for the page's
status, and prints one JSON object for tests/tests/report_html_firefox.rs: the status, the DOM,
the console entries, every request the page made, and a screenshot written to SHOT.

usage: report_html_bidi.py PAGE PROFILE_DIR SHOT
"""

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import time

from websockets.asyncio.client import connect

page, profile, shot = sys.argv[1], sys.argv[2], sys.argv[3]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


port = free_port()
os.makedirs(profile, exist_ok=True)
# The new-tab page and telemetry would make requests of their own, not the page's.
with open(os.path.join(profile, "user.js"), "w") as f:
    for pref, value in [
        ("browser.shell.checkDefaultBrowser", "false"),
        ("browser.startup.homepage_override.mstone", '"ignore"'),
        ("datareporting.policy.dataSubmissionEnabled", "false"),
        ("toolkit.telemetry.reportingpolicy.firstRun", "false"),
        ("network.captive-portal-service.enabled", "false"),
        ("browser.safebrowsing.update.enabled", "false"),
    ]:
        f.write(f'user_pref("{pref}", {value});\n')
err_path = profile + ".err"
firefox = subprocess.Popen(
    ["firefox-esr", "--headless", "--no-remote", "--profile", profile,
     "--remote-debugging-port", str(port), "--width", "1400", "--height", "2400", "about:blank"],
    stdout=subprocess.DEVNULL, stderr=open(err_path, "w"))


async def main():
    deadline = time.time() + 60
    ws = None
    while ws is None:
        try:
            ws = await connect(f"ws://127.0.0.1:{port}/session", max_size=None)
        except OSError:
            if time.time() > deadline or firefox.poll() is not None:
                raise SystemExit("firefox did not open WebDriver BiDi: " + open(err_path).read()[-2000:])
            await asyncio.sleep(0.2)
    next_id = 0
    events = []

    async def send(method, params):
        nonlocal next_id
        next_id += 1
        await ws.send(json.dumps({"id": next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(await ws.recv())
            if msg.get("id") == next_id:
                if msg.get("type") == "error":
                    raise SystemExit(f"{method}: {msg.get('error')}: {msg.get('message')}")
                return msg["result"]
            if msg.get("type") == "event":
                events.append(msg)

    await send("session.new", {"capabilities": {}})
    await send("session.subscribe", {"events": ["log.entryAdded", "network.beforeRequestSent"]})
    context = (await send("browsingContext.getTree", {}))["contexts"][0]["context"]
    await send("browsingContext.navigate", {"context": context, "url": "file://" + page, "wait": "complete"})

    async def evaluate(expr):
        r = await send("script.evaluate", {"expression": expr, "target": {"context": context},
                                           "awaitPromise": False})
        if r.get("type") == "exception":
            raise SystemExit(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    status = None
    while time.time() < deadline:
        status = await evaluate("(document.getElementById('status')||{dataset:{}}).dataset.status || null")
        if status in ("ok", "error"):
            break
        await asyncio.sleep(0.1)
    dom = await evaluate("document.documentElement.outerHTML")
    png = await send("browsingContext.captureScreenshot", {"context": context, "origin": "document"})
    with open(shot, "wb") as f:
        f.write(base64.b64decode(png["data"]))
    # Let late console entries and requests arrive.
    await evaluate("1")
    console = [e["params"].get("text") for e in events if e["method"] == "log.entryAdded"]
    requests = [e["params"]["request"]["url"] for e in events if e["method"] == "network.beforeRequestSent"]
    await send("session.end", {})
    await ws.close()
    return {"status": status, "dom": dom, "console": console, "requests": requests}


try:
    result = asyncio.run(main())
finally:
    firefox.terminate()
    try:
        firefox.wait(10)
    except subprocess.TimeoutExpired:
        firefox.kill()
print(json.dumps(result))
