#!/bin/bash
# The cost targets on the NVIDIA H100 (device tool): GPU busy and CPU frame time of the
# defaults and of budgeted draw timing at 10 000 draws, per-draw aggregates against every draw
# timed, and the HUD's added time on glxgears against MangoHud's. Carry `.device` and `.devbin`
# (stripped release builds: framescope, framescope-testapp, libframescope_vk.so,
# libframescope_gl.so), then run:  source .device/setup.sh; bash tests/device/h100-costs.sh
# Making them: ../shared/device/prepare.sh (fills .device), then
#   cargo build --release -p framescope-vk -p framescope-gl -p framescope-cli -p framescope-testapp
#   mkdir .devbin && cp target/release/{framescope,framescope-testapp,libframescope_vk.so,libframescope_gl.so} .devbin/ && strip .devbin/*
#   echo /.devbin/ >> .git/info/exclude
# H100_COSTS_QUICK=1: GPU busy only; H100_COSTS_ONLY=off,defaults,...: only those modes.
# Writes $OUT/h100-costs.json (read by `cargo xtask bench` from docs/h100-costs.json) and logs.
set -u
export XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
exec python3 "$(dirname "$0")/h100_costs.py"
