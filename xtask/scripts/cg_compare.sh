#!/bin/bash
# (committed with the measurement in docs/performance.md; needs valgrind, Xvfb and vkcube)
# Instructions per vkcube frame under callgrind for two framescope builds (before, after),
# as xtask/src/bench_cg.rs measures them: (Ir(250) - Ir(50)) / 200, every thread.
set -u
B=$1; A=$2; shift 2
rt=$(mktemp -d); chmod 700 $rt
Xvfb :77 -screen 0 1280x720x24 -nolisten tcp >/dev/null 2>&1 & X=$!; sleep 1
export DISPLAY=:77 XDG_RUNTIME_DIR=$rt DISABLE_MANGOHUD=1
unset FRAMESCOPE FRAMESCOPE_CONFIG FRAMESCOPE_DUMP MANGOHUD VK_INSTANCE_LAYERS
ir() { # fs-binary config frames
  local out=$rt/cg.out
  if [ "$1" = bare ]; then valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=$out vkcube --width 500 --height 500 --present_mode 0 --c $3 2>$rt/err >/dev/null
  else FRAMESCOPE_CONFIG="$2" valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=$out $1 run -- vkcube --width 500 --height 500 --present_mode 0 --c $3 2>$rt/err >/dev/null; fi
  grep "Collected :" $rt/err | sed 's/.*Collected : //; s/,//g' | sort -n | tail -1
}
per() { l=$(ir "$1" "$2" 250); s=$(ir "$1" "$2" 50); echo "scale=4; ($l - $s) / 200 / 1000000" | bc; }
echo "| configuration | before | after |"; echo "|---|---|---|"
echo "| bare | $(per bare '') | $(per bare '') |"
for c in "hud_refresh_ms=10000" "hud=0,hud_refresh_ms=10000" "samples=off,hud_refresh_ms=10000"; do
  echo "| framescope $c | $(per $B "$c")M | $(per $A "$c")M |"
done
kill $X; rm -rf $rt
