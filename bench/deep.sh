#!/usr/bin/env bash
# verify --deep per-object overhead on the embedded default (file://): a
# demo store of many small objects (every topic, the demo's own small
# batches), `verify --all --deep` timed against sha256sum over the same
# object files in the same run, DEEP_RUNS rounds (default 3), the commands
# interleaved in each round. Prints, per command, the median with the
# spread (min-max) of the wall and CPU times, and the ratios of the
# medians (sha256sum time / verify time: above 1 is faster than sha256sum)
# with the ratios' own spread over the rounds (each round's sha256sum
# against the same round's verify), and the best-of ratio.
#
#   bash bench/deep.sh                     # 200k records (a 2-core machine)
#   DEEP_RECORDS=1000000 bash bench/deep.sh   # the issue's 1M-record store
#   NEREUSCTL=/path/to/nereusctl bash bench/deep.sh   # another build
#   DEEP_STORE=/tmp/deep bash bench/deep.sh   # build the store once, reuse it
#   DEEP_BEFORE=/path/to/old/nereusctl bash bench/deep.sh   # and time that build
#                                          # too, in the same run (before/after)
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${DEEP_RECORDS:-200000}
RUNS=${DEEP_RUNS:-3}
work=$(mktemp -d /tmp/nereus-deep.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -n "${NEREUSCTL:-}" ]; then N=$NEREUSCTL; else go build -o "$work/nereusctl" . && N="$work/nereusctl"; fi
export XDG_STATE_HOME="$work/state" XDG_CONFIG_HOME="$work/config"
now() { date +%s.%N; }


# DEEP_STORE=/dir reuses (or keeps) a store built by an earlier run.
st=${DEEP_STORE:-$work/store}
[ -d "$st/bindings" ] || $N --store "file://$st" demo --records "$RECORDS" --checkpoints 0 --no-tour -q >/dev/null
find "$st/streams" \( -name '*.kb' -o -name '*.ntc2' \) -print0 | sort -z > "$work/files"
objects=$(tr -cd '\0' < "$work/files" | wc -c)
bytes=$(xargs -0 cat < "$work/files" | wc -c)
echo "deep: $N, $RECORDS records, $objects objects, $bytes bytes ($((bytes / objects)) per object), $(nproc) cores"

# Wall time is what the goal is about; CPU time (user + system) is printed
# too, as on a shared machine the wall clock also measures the neighbours.
python3 - "$N" "$st" "$work/files" "$RUNS" "$bytes" "${DEEP_BEFORE:-}" <<'PY'
import os, resource, subprocess, sys, time
n, st, files, runs, b, before = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
def run(cmd, env=None, stdin=None):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, env=env)
    t = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return t, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
one_env = dict(os.environ, GOMAXPROCS="1")
cmds = {
    "sha256sum over the files": (f"xargs -0 sha256sum < {files}", None),
    "cat of the files | sha256sum": (f"xargs -0 cat < {files} | sha256sum", None),
    "verify --all --deep, 1 core": (f"{n} --store file://{st} verify --all --deep -q", one_env),
    "verify --all --deep, all cores": (f"{n} --store file://{st} verify --all --deep -q", None),
}
if before:
    cmds["verify --all --deep, 1 core, before"] = (f"{before} --store file://{st} verify --all --deep -q", one_env)
times = {k: [] for k in cmds}
for _ in range(runs):
    for k, (c, env) in cmds.items():
        times[k].append(run(c, env))
def med(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
def stat(k, i):
    xs = [t[i] for t in times[k]]
    return med(xs), min(xs), max(xs)
print(f"{runs} rounds; median (min-max)")
for k in cmds:
    w, c = stat(k, 0), stat(k, 1)
    print(f"{k:38s} wall {w[0]:6.3f} s ({w[1]:.3f}-{w[2]:.3f}, {b / w[0] / 1e6:6.1f} MB/s)  cpu {c[0]:6.3f} s ({c[1]:.3f}-{c[2]:.3f})")
def ratios(base, k):
    out = []
    for i in (0, 1):
        per = [times[base][r][i] / times[k][r][i] for r in range(runs)]
        best = min(t[i] for t in times[base]) / min(t[i] for t in times[k])
        out.append((stat(base, i)[0] / stat(k, i)[0], min(per), max(per), best))
    return out
for k in [k for k in cmds if k.startswith("verify")]:
    (w, wl, wh, wb), (c, cl, ch, cb) = ratios("sha256sum over the files", k)
    print(f"ratio, {k[len('verify --all --deep, '):]:14s} vs sha256sum: wall {w:.2f}x ({wl:.2f}-{wh:.2f}, best {wb:.2f}x), cpu {c:.2f}x ({cl:.2f}-{ch:.2f}, best {cb:.2f}x) (goal >= 0.8x)")
(w, wl, wh, wb), (c, cl, ch, cb) = ratios("cat of the files | sha256sum", "verify --all --deep, 1 core")
print(f"ratio, 1 core vs cat | sha256sum:   wall {w:.2f}x ({wl:.2f}-{wh:.2f}), cpu {c:.2f}x ({cl:.2f}-{ch:.2f})")
PY
