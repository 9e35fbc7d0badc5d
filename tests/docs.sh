#!/usr/bin/env bash
# The documentation cannot rot: a new user's first five minutes, replayed, and every
# code block of README.md and docs/*.md run.
#
# 1. README.md first, as a new user follows it from a fresh clone: in a temporary
#    HOME, from the checkout, its install steps (`make install PREFIX=$HOME/.local`,
#    the LuaRocks module and `eval "$(luarocks path)"`), then its Lua program with the
#    installed `lutra`, its C program built with pkg-config, and its Rust program as a
#    new cargo project.
# 2. Then each docs/*.md, in the environment the README left (the installed `lutra`
#    on the PATH, pkg-config finding `lutra`, the rock on LUA_CPATH), each in a
#    directory of its own.
#
# # Blocks
# A fenced block's info string is its language, then words:
# - `sh`: run by bash (`set -euo pipefail`). Blocks of one document share their
#   exported variables and working directory, as one terminal would; `cd` persists.
#   The README's first blocks start in the checkout; docs/*.md start in a scratch
#   directory, where the checkout is `$LUTRA`.
# - `lua`, `c`: written to the file named on their first line (`-- name.lua`,
#   `/* name.c ...`), in the working directory. An `sh` block that follows (before
#   the next `lua` or `c` block) and names the file builds or runs it; otherwise it
#   is run here: `lutra name.lua`
#   (`lua module`: `lua5.4 name.lua`, with the rock), `cc name.c $(pkg-config
#   --cflags --libs lutra)` then the program (`c gnu-tm`: `gcc -fgnu-tm`, run on
#   Lutra's installed libitm). `fails`: the run must end with a non-zero status.
# - `rust`: compiled and run as a doctest by crates/lutra-docs (`cargo test`); a block
#   whose first line is `// path.rs` is also written to that path (a cargo project's
#   source that a later `sh` block builds).
# - `text output`: what the block just run printed (standard output and error
#   together): exactly, or for a `fails` run, each line somewhere in it. Other `text`
#   blocks are prose (an error message, a table) and are not compared.
# - `no-run: reason`: not run (the reason is required). Keep such blocks rare.
# Any other language, or a block without one, fails the test: a block that nothing
# runs must say so.
#
# Environment: CARGO_TARGET_DIR (default target/: `make install` reuses the build),
# DOCS_KEEP=1 keeps the scratch directory. Needs what `make test` needs
# (scripts/install-deps.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/lutra-docs.XXXXXX")
if [ "${DOCS_KEEP:-0}" = 1 ]; then
  echo "docs: scratch directory $scratch (kept)"
else
  trap 'rm -rf "$scratch"' EXIT
fi

# The toolchain stays where it is; everything a user installs goes to the new HOME.
export CARGO_HOME=${CARGO_HOME:-$HOME/.cargo} RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
export HOME=$scratch/home LUTRA=$ROOT
mkdir -p "$HOME"
env_file=$scratch/env
export -p >"$env_file"

failures=0
blocks=0

# Splits a markdown file into $2/N.info, $2/N.body and $2/N.line, one per fenced
# block; prints the number of blocks.
extract() {
  awk -v out="$2" '
    !inside && /^```/ {
      n++; inside = 1; info = substr($0, 4)
      print info > (out "/" n ".info"); close(out "/" n ".info")
      print NR > (out "/" n ".line"); close(out "/" n ".line")
      printf "" > (out "/" n ".body"); next
    }
    inside && /^```[ \t]*$/ { inside = 0; close(out "/" n ".body"); next }
    inside { print >> (out "/" n ".body") }
    END { if (inside) { print "unterminated block" > "/dev/stderr"; exit 1 }; print n + 0 }
  ' "$1"
}

fail() {
  echo "FAIL  $where: $*"
  failures=$((failures + 1))
}

# Runs a command in the document's shell state (exported variables, working
# directory), saves that state back, and leaves its output in $scratch/out.
in_shell() {
  local script=$1
  set +e
  bash -c '
    set -euo pipefail
    . "$1"; cd "$(cat "$2")"
    eval "$3"
    export -p > "$1"; pwd > "$2"
  ' docs "$env_file" "$cwd_file" "$script" >"$scratch/out" 2>&1
  status=$?
  set -e
}

# The file a block names on its first line (`-- x.lua`, `/* x.c ...`, `// x.rs`).
named_file() {
  sed -n '1{s/^-- *\([^ :]*\.lua\).*/\1/p; s/^\/[*\/] *\([^ :]*\.[a-z]*\).*/\1/p}' "$1"
}

# Whether an `sh` block after block $2 of the document in $1, and before its next
# `lua` or `c` block, mentions the file $3.
built_later() {
  local i
  for ((i = $2 + 1; i <= count; i++)); do
    case "$(cut -d' ' -f1 "$1/$i.info")" in
      sh) grep -qF -- "$3" "$1/$i.body" && return 0 ;;
      lua | c) return 1 ;;
    esac
  done
  return 1
}

run_document() {
  local doc=$1 start=$2
  local dir=$scratch/blocks/$(basename "$doc" .md)
  mkdir -p "$dir"
  count=$(extract "$doc" "$dir")
  cwd_file=$scratch/cwd
  echo "$start" >"$cwd_file"
  local i ran="" ran_fails=0
  for ((i = 1; i <= count; i++)); do
    local info lang body file words
    info=$(cat "$dir/$i.info")
    where="$doc:$(cat "$dir/$i.line")"
    lang=${info%% *}
    words=" ${info#"$lang"} "
    body=$dir/$i.body
    blocks=$((blocks + 1))
    if [[ $words == *" no-run"* ]]; then
      [[ $words =~ no-run:\ *[^\ ] ]] || fail "no-run without a reason (\`no-run: why\`)"
      ran=""
      continue
    fi
    case "$lang" in
      text)
        [[ $words == *" output "* ]] || continue
        if [ -z "$ran" ]; then
          fail "an output block follows no block that ran"
        elif [ "$ran_fails" = 1 ]; then
          while IFS= read -r line; do
            grep -qF -- "$line" "$scratch/out" || fail "output of $ran lacks '$line'"
          done <"$body"
        elif ! diff -u "$body" "$scratch/out" >"$scratch/diff"; then
          fail "output of $ran differs (- documented, + printed):"
          sed 's/^/      /' "$scratch/diff"
        fi
        ran=""
        continue
        ;;
      sh)
        in_shell "$(cat "$body")"
        ran="the block above"
        ;;
      lua | c | rust)
        file=$(named_file "$body")
        if [ "$lang" = rust ] && ! grep -qF "\"../../../$doc\"" crates/lutra-docs/src/lib.rs; then
          fail "a Rust block in a page that crates/lutra-docs/src/lib.rs does not include"
        fi
        if [ "$lang" = rust ] && [ -z "$file" ]; then
          continue # a doctest of crates/lutra-docs
        fi
        [ -n "$file" ] || file=block$i.$lang
        in_shell "mkdir -p \"\$(dirname '$file')\" && cp '$body' '$file'"
        [ "$status" = 0 ] || { fail "cannot write $file: $(cat "$scratch/out")"; continue; }
        ran=""
        if [ "$lang" = rust ] || built_later "$dir" "$i" "$file"; then
          continue
        fi
        local run
        case "$lang$words" in
          "lua "*" module "*) run="lua5.4 '$file'" ;;
          lua*) run="lutra '$file'" ;;
          "c "*" gnu-tm "*)
            run="gcc -O2 -fgnu-tm -pthread '$file' -o '${file%.c}' \$(pkg-config --cflags lutra) &&
                 LD_LIBRARY_PATH=\$(pkg-config --variable=libdir lutra)/lutra/itm './${file%.c}'" ;;
          c*) run="cc '$file' -o '${file%.c}' \$(pkg-config --cflags --libs lutra) && './${file%.c}'" ;;
        esac
        in_shell "timeout 120 bash -c \"$run\""
        ran=$file
        ;;
      "")
        fail "a block without a language (\`\`\`sh, \`\`\`lua, \`\`\`c, \`\`\`rust, \`\`\`text)"
        continue
        ;;
      *)
        fail "unknown block language '$lang' (or mark it \`no-run: why\`)"
        continue
        ;;
    esac
    ran_fails=0
    [[ $words == *" fails "* ]] && ran_fails=1
    if [ "$ran_fails" = 1 ] && [ "$status" = 0 ]; then
      fail "$ran succeeded; the block says it fails"
    elif [ "$ran_fails" = 0 ] && [ "$status" != 0 ]; then
      fail "$ran exited with status $status:"
      sed 's/^/      /' "$scratch/out"
    fi
  done
  echo "docs: $doc, $count blocks"
}

run_document README.md "$ROOT"
for doc in docs/*.md; do
  mkdir -p "$scratch/work/$(basename "$doc" .md)"
  run_document "$doc" "$scratch/work/$(basename "$doc" .md)"
done
echo "docs: $blocks blocks, $failures failed"
[ "$failures" -eq 0 ]
