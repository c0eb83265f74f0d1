#!/bin/sh
# tests/faults.sh: bad luck and bad actors, in TAP form like tests/cli.sh: runs
# killed mid-way, write errors, existing outputs, a memory cap, PAPI missing, a
# block name aimed outside the packet, and a signed packet tampered with.
OPR=${OPREVIEW:-./opreview}
Q=fixtures/profiles/quick.yaml
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
t0=$(date +%s)
ok() { n=$((n + 1)); echo "ok $n - $1"; }
no() { n=$((n + 1)); echo "not ok $n - $1"; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else no "$desc"; fi; }
code() { "$@" >"$T/out" 2>"$T/err"; echo $?; }
verdict() { case $1 in 0|10|11|12) return 0;; esac; return 1; }
# digest of a whole tree: names and contents
treesum() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum); }
# a packet is complete when every part is there and findings.json parses
complete() {
	for f in packet.md packet.html packet.xlsx findings.json owners.json run/manifest.json; do
		test -s "$1/$f" || return 1
	done
	/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1/findings.json" 2>/dev/null
}
leftovers() { (cd "$T" && ls -d "$1".tmp-* "$1".old-* 2>/dev/null | tr '\n' ' '); }
# flips the lowest bit of the byte at offset $2 of file $1
flip() {
	b=$(od -An -tu1 -j"$2" -N1 "$1" | tr -d ' ')
	printf "\\$(printf %03o $((b ^ 1)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# --- a run killed at any point leaves no packet or a complete one --------------
# Fixed delays (mostly inside collection), then kills just after the temporary
# directory appears, so the write phase is interrupted too.
for d in 0.1 0.3 0.6 1.0 tmp+0 tmp+0.05 tmp+0.2; do
	$OPR run --profile $Q --out "$T/k" --quiet >/dev/null 2>&1 &
	pid=$!
	case $d in
	tmp+*)
		i=0
		while [ ! -d "$T/k.tmp-$pid" ] && [ ! -e "$T/k" ] && [ $i -lt 3000 ] && kill -0 $pid 2>/dev/null; do
			sleep 0.01; i=$((i + 1))
		done
		sleep "${d#tmp+}";;
	*) sleep "$d";;
	esac
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null
	if [ ! -e "$T/k" ]; then
		ok "killed at $d s: no packet"
	elif complete "$T/k"; then
		ok "killed at $d s: the packet is complete"
		rm -rf "$T/k"
	else
		no "killed at $d s: a partial packet: $(ls "$T/k" | tr '\n' ' ')"
	fi
	echo "# killed at $d s: left beside it: $(leftovers k)"
done
# a stale directory of a dead process, and one of a live process (this shell)
sh -c 'exit 0' & dead=$!
wait $dead
mkdir -p "$T/k.tmp-$dead/run" "$T/k.tmp-$$"
echo "# before the rerun: $(leftovers k)"
f=; [ -e "$T/k" ] && f=--force
rc=$(code $OPR run --profile $Q --out "$T/k" --quiet $f)
check "a rerun after the kills succeeds ($rc)" verdict "$rc"
check "the rerun left a complete packet" complete "$T/k"
left=$(leftovers k)
if [ "$left" = "k.tmp-$$ " ]; then
	ok "the rerun removed stale k.tmp-* of dead processes and kept the live one's"
elif [ -z "$left" ]; then
	no "the rerun removed k.tmp-$$ of a live process"
else
	no "stale directories remain: $left"
fi
rmdir "$T/k.tmp-$$"

# --- an existing packet is kept without --force, replaced whole with it ---------
sum=$(treesum "$T/k")
rc=$(code $OPR run --profile $Q --out "$T/k" --quiet)
check "an existing packet without --force: exit 5" test "$rc" = 5
check "... one line naming --force" sh -c "test \$(wc -l <$T/err) = 1 && grep -q -- '--force' $T/err"
check "... and the packet is unchanged" test "$(treesum "$T/k")" = "$sum"
cp "$T/k/run/manifest.json" "$T/manifest.before"
echo stray >"$T/k/stray.txt"
rc=$(code $OPR run --profile $Q --out "$T/k" --quiet --force)
check "--force replaces it ($rc)" verdict "$rc"
check "... completely: the stray file is gone" test ! -e "$T/k/stray.txt"
check "... with a new complete packet" sh -c "! cmp -s $T/manifest.before $T/k/run/manifest.json"
check "... and nothing left beside it" test -z "$(leftovers k)"
complete "$T/k" || no "the forced packet is incomplete"

# --- a write error (file size limit) fails cleanly -------------------------------
rc=$(code sh -c "trap '' XFSZ; ulimit -f 64; exec $OPR run --profile $Q --out $T/fz --quiet --no-papi")
check "a write error exits 1 ($rc)" test "$rc" = 1
check "... with one line 'opreview: ...: File too large'" sh -c "test \$(wc -l <$T/err) = 1 && grep -q '^opreview: .*File too large' $T/err"
check "... and leaves no packet nor temporary directory" sh -c "! test -e $T/fz && test -z \"$(leftovers fz)\""

# --- a memory cap below what a block needs is refused up front -------------------
sed 's/^budget:.*$/budget: {seconds: 1, memory_gib: 0.0001}/; /^  seconds: /d; /^  min_samples: /d; /^  max_samples: /d' \
	$Q >"$T/capped.yaml"
rc=$(code $OPR run --profile "$T/capped.yaml" --out "$T/mcap" --quiet)
check "a memory cap too small exits 2 ($rc)" test "$rc" = 2
check "... with one line naming GiB needed and the cap" sh -c "test \$(wc -l <$T/err) = 1 &&
	grep -q 'needs [0-9.e-]*[1-9][0-9.e-]* GiB of host memory; the cap is 0.0001 GiB' $T/err"
check "... and writes nothing" sh -c "! ls -d $T/mcap* 2>/dev/null"

# --- a block name cannot leave the packet ---------------------------------------
rc=$(code $OPR run --profile fixtures/bad/name-path-separator.yaml --out "$T/esc/p" --quiet)
check "a block name with '/' and '..' is refused (2)" sh -c "test $rc = 2 && grep -q \"block name '../../etc/conv' is invalid\" $T/err && ! test -e $T/esc && ! test -e $T/etc"

# --- PAPI unavailable: every event says so -----------------------------------------
rc=$(code $OPR run --profile $Q --out "$T/np" --quiet --no-papi)
if verdict "$rc" && complete "$T/np"; then ok "--no-papi still gives a packet ($rc)"
else no "--no-papi gave no packet ($rc): $(cat "$T/err")"; fi
check "findings.json lists every PAPI event as unavailable with a reason" /usr/bin/python3 -c "
import json,sys
f=json.load(open('$T/np/findings.json')); m=json.load(open('$T/np/run/manifest.json'))
ev=[e['name'] for e in m['events']]
assert ev and all(not e['available'] and e['reason'] for e in m['events']), 'manifest events'
papi=[c for c in f['counters'] if c['name'].split(' ')[0] in ev]
blocks=len(f['blocks'])
assert len(papi)==len(ev)*2*blocks, (len(papi), len(ev), blocks)
bad=[c for c in papi if c['available'] or c['value'] is not None or c['provenance']!='unavailable' or not c['reason']]
assert not bad, bad[:2]
assert 'no-papi' in f['papi_status']"
check "packet.md says PAPI is unavailable, every event with the reason" sh -c "grep -q '^PAPI: disabled by --no-papi' $T/np/packet.md &&
	grep -q '(PAPI: disabled by --no-papi) |' $T/np/packet.md && ! grep -q 'PAPI read 0.0 ns' $T/np/packet.md &&
	test \$(grep '^| every block | both | .* | PAPI disabled by --no-papi |\$' $T/np/packet.md | tr ',' '\n' | wc -l) -ge 10"

# --- sign-off: missing, signed, tampered ------------------------------------------
P=$T/np
rc=$(code $OPR verify "$P")
check "verify before any signature exits 4" test "$rc" = 4
check "... with every role missing" test "$(grep -c '): missing' "$T/out")" = 3
for r in ml-compiler-engineer:compiler kernel-performance-owner:kernel runtime-systems-engineer:runtime; do
	rc=$(code $OPR sign "$P" --role "${r%%:*}" --key "fixtures/owners/${r#*:}.key")
	check "sign as ${r%%:*} (0)" test "$rc" = 0
done
rc=$(code $OPR verify "$P")
check "verify after three approvals exits 0 and says signed off" sh -c "test $rc = 0 && tail -1 $T/out | grep -q '^signed off'"
mkdir -p "$T/keep"
# verify must exit 4 and name $1 in its output
caught() { rc=$(code $OPR verify "$P"); [ "$rc" = 4 ] && grep -qF -- "$1" "$T/out" "$T/err"; }
for f in packet.md packet.html packet.xlsx findings.json; do
	cp "$P/$f" "$T/keep/$f"
	size=$(wc -c <"$P/$f")
	for off in 0 $((size / 2)) $((size - 1)); do
		flip "$P/$f" $off
		check "a flipped byte at $off of $f is caught, naming it" caught "changed: $f"
		cp "$T/keep/$f" "$P/$f"
	done
done
head -c 1000 "$T/keep/findings.json" >"$P/findings.json"
check "a truncated findings.json is caught" caught "changed: findings.json"
cp "$T/keep/findings.json" "$P/findings.json"
echo extra >"$P/notes.txt"
check "an added file is caught" caught "added: notes.txt"
rm "$P/notes.txt"
mv "$P/packet.xlsx" "$T/keep/packet.xlsx"
check "a removed file is caught" caught "removed: packet.xlsx"
mv "$T/keep/packet.xlsx" "$P/packet.xlsx"
s=$P/signoff
cp "$s/ml-compiler-engineer.json" "$T/keep/a"
cp "$s/kernel-performance-owner.json" "$s/ml-compiler-engineer.json"
cp "$T/keep/a" "$s/kernel-performance-owner.json"
check "two swapped signature files are caught" caught "ml-compiler-engineer bad signature"
cp "$s/ml-compiler-engineer.json" "$s/kernel-performance-owner.json"
cp "$T/keep/a" "$s/ml-compiler-engineer.json"
rc=$(code $OPR verify "$P")
check "restored, the packet verifies again (0)" test "$rc" = 0

echo "# faults.sh: $(($(date +%s) - t0)) s"
echo "1..$n"
