#!/bin/sh
# barrier-symbols.sh BINARY LUTRA_LIBITM -- checks that the barriers test really
# calls what it claims to cover (run by the Makefile after building it):
#
# 1. The ABI's barriers are those GCC's own libitm exports: every _ITM_R*, _ITM_W*
#    and _ITM_mem* function (read from `nm -D` of the libitm.so.1 that ${CC:-cc}
#    links). Each must be called somewhere in BINARY, and defined by Lutra's
#    LUTRA_ITM library.
# 2. The barriers GCC emits by itself (listed below: every variant of the scalar
#    and vector types, and the transfers GCC uses for memcpy, memmove, memset and
#    copies of aggregates) must each be called from a function of BINARY named
#    emitted_*, which holds only code GCC instruments itself (barriers.h).
#
# Prints what it found; exits 1 if anything is missing.
set -eu
binary=$1
lutra=$2
gnu=$(${CC:-cc} -print-file-name=libitm.so.1)
[ -f "$gnu" ] || { echo "FAIL barrier-symbols: no libitm.so.1 found through ${CC:-cc}"; exit 1; }

abi=$(nm -D --defined-only "$gnu" | awk '{print $3}' | sed 's/@.*//' | grep -E '^_ITM_(R|W|mem)' | sort -u)
emitted=$(
  for type in U1 U2 U4 U8 F D E M64 M128 M256; do
    for variant in R RaR RaW RfW W WaR WaW; do echo "_ITM_$variant$type"; done
  done
  printf '%s\n' _ITM_memcpyRnWt _ITM_memcpyRtWn _ITM_memcpyRtWt _ITM_memmoveRtWt _ITM_memsetW
)

# "function symbol" for every call of an _ITM_ function in the binary.
calls=$(objdump -d --no-show-raw-insn "$binary" | awk '
  /^[0-9a-f]+ <.*>:$/ { function_name = substr($2, 2, length($2) - 3) }
  /call.*<_ITM_/ { sub(/.*<_ITM_/, "_ITM_"); sub(/(@plt)?>.*/, ""); print function_name, $0 }')
defined=$(nm -D --defined-only "$lutra" | awk '{print $3}' | sed 's/@.*//')

missing=0
for symbol in $abi; do
  echo "$calls" | awk -v s="$symbol" '$2 == s { found = 1 } END { exit !found }' \
    || { echo "FAIL barrier-symbols: $binary never calls $symbol"; missing=1; }
  echo "$defined" | grep -qx "$symbol" \
    || { echo "FAIL barrier-symbols: $lutra does not define $symbol"; missing=1; }
done
for symbol in $emitted; do
  echo "$abi" | grep -qx "$symbol" \
    || { echo "FAIL barrier-symbols: $symbol is not a barrier of $gnu"; missing=1; }
  echo "$calls" | awk -v s="$symbol" '$1 ~ /^emitted_/ && $2 == s { found = 1 } END { exit !found }' \
    || { echo "FAIL barrier-symbols: GCC emitted no call of $symbol in an emitted_* function"; missing=1; }
done
[ "$missing" = 0 ] || exit 1
echo "ok barrier symbols: all $(echo "$abi" | wc -l) barriers of the ABI called, $(echo "$emitted" | wc -l) of them emitted by GCC"
