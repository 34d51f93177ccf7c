#!/usr/bin/env bash
# Checks each rank's trace of the lowered layer program on N ranks against
# the emulated driver: the module is loaded lazily after the device
# context, kernel -> all_reduce (1024 f32) -> kernel follow each other on the
# shared stream with no host sync in between, and nothing leaks (buffers the
# program frees are kept for reuse on the stream and given back to the driver
# when the runtime is finalized, so no free shows before the sync).
#
#   check-layer-trace.sh TRACE_DIR N   (run by ../run-traced.sh)
set -u
dir=$1 n=$2
for ((r = 0; r < n; r++)); do
  t="$dir/trace.$r"
  s=$(sed -n 's/^stream-create \(s[0-9]*\).*/\1/p' "$t" | head -1)
  got=$(awk '/^launch layer_kernel/ {on = 1} on && /^sync / {exit}
             on {sub(/ comm=c[0-9]+ rank=[0-9]+\/[0-9]+/, ""); print}' "$t")
  want="launch layer_kernel grid=8,1,1 block=8,16,1 smem=0 stream=$s
collective all_reduce count=1024 type=7 op=0 stream=$s
alloc a5 bytes=4096 device stream=$s
module-load image=fatbin
launch layer_kernel grid=8,1,1 block=8,16,1 smem=0 stream=$s"
  if [ "$got" != "$want" ]; then
    printf 'FAIL: rank %d: from the first launch to the first sync:\n%s\n' \
      "$r" "$got"
    exit 1
  fi
  first_ctx=$(grep -n '^context ' "$t" | head -1 | cut -d: -f1)
  first_mod=$(grep -n '^module-load' "$t" | head -1 | cut -d: -f1)
  if [ -z "$first_ctx" ] || [ -z "$first_mod" ] || [ "$first_mod" -lt "$first_ctx" ]; then
    echo "FAIL: rank $r: module loaded before the device context"; exit 1
  fi
  if [ "$(tail -1 "$t")" != "exit live_allocations=0 live_bytes=0" ]; then
    echo "FAIL: rank $r: $(tail -1 "$t")"; exit 1
  fi
done
echo "PASS: $n traces checked"
