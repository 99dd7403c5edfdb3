#!/bin/bash
# The package's tree on the H100 (Ubuntu, NVIDIA's GL): the GL dump's PCI ids (NVIDIA's GL has
# no GLX_MESA_query_renderer, so they come from NVML's match of the renderer string), the
# installed layout's `framescope run` ($LIB paths, no ld.so line), doctor, and the HUD with the
# standard preset in glxgears. Carry `.device` (../shared/device/prepare.sh) and
# `.devfs/framescope.tar.xz` (cargo xtask package: target/package/release/*.tar.xz).
# Run as root from the project's root:  bash tests/device/h100-gl-package.sh
# Writes its report and the screenshot to $OUT (or /tmp/pkg-out).
set -u
OUT=${OUT:-/tmp/pkg-out}; mkdir -p "$OUT"
exec > >(tee "$OUT/h100-gl-package.txt") 2>&1
source .device/setup.sh
P=/tmp/fspkg; mkdir -p $P
tar -C $P -xJf .devfs/framescope.tar.xz
export XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
FS=$P/usr/bin/framescope
date -u; nvidia-smi --query-gpu=name,driver_version,pci.bus_id,pci.device_id --format=csv,noheader

echo; echo "== 1. doctor (the package's tree, not installed system-wide)"
$FS doctor | head -30

echo; echo "== 2. glxgears through GLX: the header's device"
timeout 60 $FS run --dump /tmp/gears.jsonl -- timeout -s INT 5 $GLXGEARS -geometry 1000x700 > /tmp/gears.log 2>&1
echo "rc=$? (124: timeout ended glxgears)"
grep -E "ld.so|ELF class|cannot be preloaded|internal error" /tmp/gears.log || echo "no ld.so or internal-error line"
python3 - /tmp/gears.jsonl <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
h = lines[0]; d = h.get("device") or {}
print("api", h.get("api"), "process_arch", h.get("process_arch"))
for k in ["name", "vendor_id", "device_id", "pci_bus", "pci_ids_from", "driver_name", "driver_version"]:
    v = d.get(k)
    print(f"  device.{k}: {hex(v) if isinstance(v, int) and k.endswith('_id') else v}")
print("frames", sum(1 for l in lines if l.get("type") == "frame"))
PY
$FS report /tmp/gears.jsonl | head -6

echo; echo "== 3. HUD, standard preset, glxgears 1000x700 (screenshot of frame 2000)"
timeout 60 $FS run --config "hud_preset=standard,screenshot=2000,screenshot_path=$OUT/h100-hud-standard-glxgears.png" -- timeout -s INT 6 $GLXGEARS -geometry 1000x700 > /tmp/hud.log 2>&1
echo "rc=$?"; ls -la $OUT/*.png 2>&1
