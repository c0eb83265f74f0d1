#!/bin/sh
# tests/faults.sh: bad luck and bad actors, in TAP form like tests/cli.sh: runs
# killed mid-way, write errors, existing outputs, a memory cap, PAPI missing, a
# block name aimed outside the packet, over-long paths beside a victim file, two
# runs into one output, SIGINT/SIGTERM during the write, FIFOs, an archive
# edited after it was written, a full disk, and a signed packet tampered with.
OPR=${OPREVIEW:-./opreview}
Q=fixtures/profiles/quick.yaml
T=$(mktemp -d)
trap 'umount "$T/full" 2>/dev/null; rm -rf "$T"' EXIT
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

# --- over-long paths: refused at start, nothing removed or written ----------------
# long PATH_LEN: a path of exactly PATH_LEN characters under $T/L, its folders
# made (components of 200 characters: NAME_MAX is 255)
long() {
	d=$T/L
	while [ $(($1 - ${#d})) -gt 240 ]; do d=$d/$(printf '%0200d' 0 | tr 0 d); done
	mkdir -p "$d"
	n=$(($1 - ${#d} - 1))
	echo "$d/$(printf "%0${n}d" 0 | tr 0 f)"
}
F=$(long 1023)
echo "the user's file" >"$F"
before=$(find "$T/L" | wc -l)
rc=$(code $OPR run --profile $Q --out "${F}s" --quiet --no-papi)
check "run --out of 1024 characters beside a victim F: exit 2 ($rc), one line" sh -c "test $rc = 2 &&
	test \$(wc -l <$T/err) = 1 && grep -q 'path too long: .* is 1024 characters; the limit is 400' $T/err"
check "... and F is untouched, nothing created" sh -c "test \"\$(cat '$F')\" = \"the user's file\" &&
	test \$(find $T/L | wc -l) = $before"
G=$(long 1099)
echo "the user's other file" >"$G"
before=$(find "$T/L" | wc -l)
rc=$(code $OPR analyze fixtures/archive --out "${G}x")
check "analyze --out of 1100 characters: exit 2 ($rc), G untouched" sh -c "test $rc = 2 &&
	test \"\$(cat '$G')\" = \"the user's other file\" && test \$(find $T/L | wc -l) = $before"
H=$(long 4281)
rmdir "${H%/*}"
before=$(find "$T/L" | wc -l)
t1=$(date +%s)
rc=$(code $OPR run --profile fixtures/profiles/default.yaml --out "$H" --quiet --no-papi)
t2=$(date +%s)
check "run --out of 4281 characters: exit 2 at once ($rc, $((t2 - t1)) s), no folder made" sh -c "test $rc = 2 &&
	test $((t2 - t1)) -le 2 && test \$(find $T/L | wc -l) = $before"
P=$(long 1533)
cp $Q "$P"
rc=$(code $OPR run --profile "$P" --out "$T/lp" --quiet --no-papi)
check "a profile path of 1533 characters: exit 2 naming the limit ($rc)" sh -c "test $rc = 2 &&
	grep -q 'run --profile: path too long' $T/err && ! test -e $T/lp"
rm -rf "$T/L"

# --- two runs into one output: one wins, the other exits 5 naming it -------------
for f in "" --force; do
	$OPR run --profile $Q --out "$T/race" --quiet --no-papi $f >"$T/r1" 2>&1 &
	p1=$!
	$OPR run --profile $Q --out "$T/race" --quiet --no-papi $f >"$T/r2" 2>&1 &
	p2=$!
	wait $p1; r1=$?
	wait $p2; r2=$?
	if verdict $r1 && [ $r2 = 5 ]; then w=$T/r1; l=$T/r2; elif verdict $r2 && [ $r1 = 5 ]; then w=$T/r2; l=$T/r1; else w=; fi
	check "two runs ${f:+$f }into one --out: one verdict, one 5 ($r1, $r2)" test -n "$w"
	[ -n "$w" ] || continue
	check "... the loser says so in one line naming the output" sh -c "test \$(wc -l <$l) = 1 &&
		grep -q \"^opreview: '$T/race' \\(is being written by another opreview\\|exists\\)\" $l"
	echo "# the loser said: $(head -c 300 "$l")"
	check "... the winner reported the packet that is in place, complete" sh -c "grep -q 'packet: $T/race/packet.md' $w &&
		grep -q \"\$(sed -n 's/^verdict: //p' $w)\" $T/race/packet.md"
	complete "$T/race" || no "the race left an incomplete packet"
	check "... and nothing beside it (no tmp, old or lock)" test -z "$(cd "$T" && ls -d race.* 2>/dev/null)"
	rm -rf "$T/race"
done

# --- SIGINT / SIGTERM while the packet is written: nothing left, 130 / 143 --------
for s in INT TERM; do
	$OPR run --profile $Q --out "$T/sig" --quiet --no-papi >/dev/null 2>"$T/err" &
	pid=$!
	i=0
	while [ ! -d "$T/sig.tmp-$pid" ] && [ $i -lt 3000 ] && kill -0 $pid 2>/dev/null; do
		sleep 0.01; i=$((i + 1))
	done
	seen=no; [ -d "$T/sig.tmp-$pid" ] && seen=yes
	kill -$s $pid
	wait $pid; rc=$?
	want=130; [ $s = TERM ] && want=143
	if [ $seen = no ] && verdict $rc; then
		echo "ok $((n = n + 1)) # SKIP SIG$s: the run finished before its temporary output was seen"
		rm -rf "$T/sig"
		continue
	fi
	check "SIG$s while the packet is written: exit $want ($rc), one line" sh -c "test $rc = $want &&
		test \$(wc -l <$T/err) = 1 && grep -q '(SIG$s); nothing was written' $T/err"
	check "... no packet, no sig.tmp-$pid, no lock" sh -c "! test -e $T/sig && test -z \"\$(cd $T && ls -d sig.* 2>/dev/null)\""
done

# --- FIFOs and other non-regular files are refused without blocking --------------
mkfifo "$T/fifo.yaml"
rc=$(code timeout 20 $OPR run --profile "$T/fifo.yaml" --out "$T/ff" --quiet)
check "a FIFO as the profile: exit 2 ($rc), one line, no wait" sh -c "test $rc = 2 &&
	test \$(wc -l <$T/err) = 1 && grep -q 'fifo.yaml: cannot open profile: it is a FIFO' $T/err && ! test -e $T/ff"
rc=$(code timeout 20 $OPR sign "$T/np" --role kernel-performance-owner --key "$T/fifo.yaml")
check "a FIFO as an owner's key: exit 2 ($rc), one line" sh -c "test $rc = 2 &&
	test \$(wc -l <$T/err) = 1 && grep -q 'FIFO' $T/err"
rc=$(code timeout 20 $OPR run --profile /dev/zero --out "$T/ff" --quiet)
check "a character device as the profile: exit 2 ($rc)" sh -c "test $rc = 2 && grep -q 'character device' $T/err"
rm -f "$T/fifo.yaml"

# --- an archive changed after it was written is refused, naming the file ----------
cp -r "$T/np/run" "$T/alt"
sed -i 's/^sla:$/sla:\n  max_regression: 0.9/' "$T/alt/profile.yaml"
for c in "analyze $T/alt" "report $T/alt --out $T/alt-packet" "replay $T/alt --no-papi"; do
	rc=$(code $OPR $c)
	check "${c%% *} of an archive whose profile.yaml was edited: exit 2 ($rc), naming it" sh -c "test $rc = 2 &&
		test \$(wc -l <$T/err) = 1 && grep -q 'alt/profile.yaml: the archive was altered' $T/err &&
		! test -e $T/alt-packet && ! test -e $T/alt/findings.json"
done
echo x >"$T/plain"
rc=$(code $OPR analyze "$T/plain")
check "an archive path that is a regular file: exit 2 ($rc)" sh -c "test $rc = 2 && grep -q 'not a directory' $T/err"

# --- a full disk while the packet is written: one line with the cause and file ----
mkdir -p "$T/full"
if mount -t tmpfs -o size=4m tmpfs "$T/full" 2>/dev/null; then
	umount "$T/full"
	# room for everything but half the workbook
	total=$(du -sk "$T/np" --exclude=signoff | cut -f1)
	x=$(du -k "$T/np/packet.xlsx" | cut -f1)
	mount -t tmpfs -o size=$((total - x / 2))k tmpfs "$T/full"
	rc=$(code $OPR run --profile $Q --out "$T/full/p" --quiet --no-papi)
	check "a full disk while the workbook is written: exit 1 ($rc), one line" sh -c "test $rc = 1 &&
		test \$(wc -l <$T/err) = 1 && grep -q \"^opreview: cannot write workbook '$T/full/p/packet.xlsx': No space left on device\$\" $T/err"
	check "... and nothing is left on it" test -z "$(ls -A "$T/full")"
	umount "$T/full"
else
	echo "ok $((n = n + 1)) # SKIP mounting a tmpfs is not allowed here (full-disk case)"
	echo "ok $((n = n + 1)) # SKIP mounting a tmpfs is not allowed here (full-disk case)"
fi

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
