# tests/cli_review.sh: the review across runs through the real binary,
# sourced by tests/cli.sh (its $OPR, $T, check, code and counter): three runs
# into a history, the third made slower on purpose (a pinned tile of 64
# elements for act-wide's candidate instead of 4096; the primary metric is the
# modelled time, so the step is the plan's, not the host's load), whose packet shows the
# trend and its change point; history add twice; parallel adders; a run on
# another envelope kept apart; compare refusing and forcing; the SHIP rule
# for synthetic shapes.

R=$T/review
mkdir -p "$R"
sed -e "s#key: \.\./owners#key: $PWD/fixtures/owners#" fixtures/profiles/quick.yaml >"$R/q.yaml"
cat >>"$R/q.yaml" <<'EOF'

primary_metric: {block: act-wide, metric: model_time}
history: {path: hist.db, window: 10}
EOF
sed 's/candidate: {fusion: none, plan: {tile_elems: 4096}}/candidate: {fusion: none, plan: {tile_elems: 64}}/' \
    "$R/q.yaml" >"$R/q-slow.yaml"
sed 's/^envelope: npu-a/envelope: npu-small/' "$R/q.yaml" >"$R/q-small.yaml"
envs="--envelopes $PWD/fixtures/envelopes"

rc=$(code $OPR run --profile "$R/q.yaml" $envs --out "$R/p1" --quiet --no-papi)
check "a run with a history in its profile gives a verdict ($rc)" sh -c "case $rc in 0|10|11|12) exit 0;; *) exit 1;; esac"
check "the profile's history (relative to its folder) was created" test -s "$R/hist.db"
check "the packet leads with the primary metric" sh -c "sed -n 3p $R/p1/packet.md | grep -q '^\*\*Primary metric: act-wide candidate modelled time\*\* = [0-9.]* us (simulated)'"
check "one run: the change-point test is not run" grep -q 'Change-point test not run: 1 comparable run(s), three are needed' "$R/p1/packet.md"
rc=$(code $OPR run --profile "$R/q.yaml" $envs --out "$R/p2" --quiet --no-papi --history "$R/hist.db")
rc=$(code $OPR run --profile "$R/q-slow.yaml" $envs --out "$R/p3" --quiet --no-papi --history "$R/hist.db")
check "the slower third run gives a verdict ($rc)" sh -c "case $rc in 0|10|11|12) exit 0;; *) exit 1;; esac"
check "its packet has the trend over three runs" sh -c "grep -q '^## Trend' $R/p3/packet.md && test \$(grep -c '^| [123] | 20' $R/p3/packet.md) = 3"
check "the trend marks run 3 as a change point, worse" sh -c "grep '^| 3 | ' $R/p3/packet.md | grep -q 'moved +[0-9.]*% (worse)' && grep -q 'between run 2 and run 3 (' $R/p3/packet.md"
check "the trend names asv's step detection" grep -q 'Change-point test: asv step detection (asv/step\\_detect.py)' "$R/p3/packet.md"
check "packet.html draws the trend with its change point" sh -c "grep -q 'Trend: act-wide candidate model_time' $R/p3/packet.html && grep -q '<title>change point</title>' $R/p3/packet.html"
if /usr/bin/python3 -c 'import openpyxl' 2>/dev/null; then
	check "the workbook has a Trend sheet with three runs and a native chart" /usr/bin/python3 -c "
import openpyxl,sys
ws=openpyxl.load_workbook('$R/p3/packet.xlsx')['Trend']
vals=[ws.cell(row=r,column=4).value for r in (2,3,4)]
sys.exit(0 if all(isinstance(v,float) and v>0 for v in vals) and vals[2]>1.1*vals[1] and len(ws._charts)==1 else 1)"
else
	echo "ok $((n = n + 1)) # SKIP python3-openpyxl missing"
fi
check "findings.json holds the trend with the change at run 3" /usr/bin/python3 -c "
import json,sys
t=json.load(open('$R/p3/findings.json'))['trend']
c=[x for x in t['changes'] if x['direction']=='worse']
sys.exit(0 if len(t['points'])==3 and c and c[-1]['at']==2 and t['points'][2]['change'] else 1)"

# history show and add, twice
$OPR history show --db "$R/hist.db" >"$R/show" 2>"$R/err"
check "history show prints the primary metric's three runs" sh -c "grep -q '^series: quick-review / act-wide / candidate model_time (simulated, ns)' $R/show && test \$(grep -c '^  [123]  20' $R/show) = 3"
check "history show marks the slower run" sh -c "grep '^  3  ' $R/show | grep -q 'moved +[0-9.]*% (worse)'"
$OPR history show --db "$R/hist.db" --metric p50 >"$R/show50" 2>&1
check "history show --metric p50 prints the measured series of the same runs" sh -c "grep -q '^series: quick-review / act-wide / candidate p50 (measured, ns)' $R/show50 && test \$(grep -c '^  [123]  20' $R/show50) = 3"
out=$($OPR history add --db "$R/hist.db" "$R/p2/run" 2>&1)
check "adding an archive again changes nothing" sh -c "echo '$out' | grep -q '^present ' && test \$($OPR history show --db $R/hist.db | grep -c '^  [0-9]  20') = 3"
check "history add of a missing archive exits 2, one line" sh -c "test \$($OPR history add --db $R/hist.db $R/nope 2>$R/e >/dev/null; echo \$?) = 2 && test \$(wc -l <$R/e) = 1"
check "history with no subcommand exits 2" test "$(code $OPR history)" = 2

# a run on another envelope: kept apart, never one line
rc=$(code $OPR run --profile "$R/q-small.yaml" $envs --out "$R/ps" --quiet --no-papi --history "$R/hist.db")
$OPR history show --db "$R/hist.db" --run "$(/usr/bin/python3 -c "import json;print(json.load(open('$R/p3/findings.json'))['trend']['this_run'])")" >"$R/show2" 2>&1
check "a run on another envelope is kept apart from the series" sh -c "grep -q '^kept apart: 1 run(s) of another envelope' $R/show2 && test \$(grep -c '^  [0-9]  20' $R/show2) = 3"
check "its own packet's trend has one run" grep -q 'Change-point test not run: 1 comparable run(s)' "$R/ps/packet.md"

# concurrent adders: six processes, three archives, one new database
pids=
for i in 1 2; do for p in p1 p2 p3; do
	$OPR history add --db "$R/par.db" "$R/$p/run" >"$R/par-$i-$p" 2>&1 &
	pids="$pids $!"
done; done
fails=0
for j in $pids; do wait "$j" || fails=$((fails + 1)); done
check "six concurrent adders all succeed" test "$fails" = 0
check "the database holds each archive once, intact, in WAL mode" /usr/bin/python3 -c "
import sqlite3,sys
db=sqlite3.connect('$R/par.db')
runs=db.execute('select count(*) from runs').fetchone()[0]
per=db.execute('select count(distinct digest), count(*) from results').fetchone()
ok=db.execute('pragma integrity_check').fetchone()[0]
mode=db.execute('pragma journal_mode').fetchone()[0]
ver=db.execute('pragma user_version').fetchone()[0]
sys.exit(0 if runs==3 and per[0]==3 and per[1]%3==0 and ok=='ok' and mode=='wal' and ver==2 else 1)"
check "each archive was added once and found present once" sh -c "test \$(cat $R/par-* | grep -c '^added ') = 3 && test \$(cat $R/par-* | grep -c '^present ') = 3"

# compare: same envelope compares; another envelope is refused unless forced
rc=$(code $OPR compare "$R/p1/run" "$R/p2/run")
check "compare of two comparable runs exits 0, tail first" sh -c "test $rc = 0 && grep -q '^Comparable: same host class' $T/out && grep -q '^| act-wide | candidate | p95 | ' $T/out && grep -n '| p95 |' $T/out | head -1 | grep -q 'conv-small'"
rc=$(code $OPR compare "$R/p1/run" "$R/ps/run")
check "compare refuses another envelope (2), one line saying why" sh -c "test $rc = 2 && test \$(wc -l <$T/err) = 1 && grep -q 'are not comparable: envelope differs' $T/err && ! test -s $T/out"
rc=$(code $OPR compare "$R/p1/run" "$R/ps/run" --force --out "$R/cmp.md")
check "compare --force says so on its first screen" sh -c "test $rc = 0 && sed -n 3p $T/out | grep -q '^\*\*NOT COMPARABLE: compared only because --force was given.\*\* envelope differs' && cmp -s $T/out $R/cmp.md"

# synthetic shapes cannot ship
check "a synthetic-only packet is not SHIP and says who validates" sh -c "! head -1 $R/p1/packet.md | grep -q '— SHIP\$' && grep -q 'rest on synthetic shapes only' $R/p1/packet.md && grep -q '| kernel-performance-owner |' $R/p1/packet.md"

# closure artifacts: each role's sign-off names the file it covers
O=$PWD/fixtures/owners
cp -r "$R/p1" "$R/signed"
check "the packet holds one closure artifact per role" sh -c "test -s $R/signed/closure/ml-compiler-engineer.md && test -s $R/signed/closure/kernel-performance-owner.md && test -s $R/signed/closure/runtime-systems-engineer.md && grep -q '^# kernel performance owner: profile traces + bottleneck map' $R/signed/closure/kernel-performance-owner.md"
for r in ml-compiler-engineer:compiler kernel-performance-owner:kernel runtime-systems-engineer:runtime; do
	$OPR sign "$R/signed" --role "${r%%:*}" --key "$O/${r#*:}.key" >"$R/sign-${r%%:*}" 2>&1
done
check "sign names the role's artifact and its digest" grep -q "^artifact closure/kernel-performance-owner.md sha256 $(sha256sum "$R/signed/closure/kernel-performance-owner.md" | cut -c1-64)\$" "$R/sign-kernel-performance-owner"
rc=$(code $OPR verify "$R/signed")
check "verify shows each role's artifact and signs off (0)" sh -c "test $rc = 0 && test \$(grep -c '): approved at .* \[artifact closure/[a-z-]*.md, sha256 [0-9a-f]\{16\}\]\$' $T/out) = 3 && grep -q '^signed off' $T/out"
sed -i 's#"artifact": "closure/kernel-performance-owner.md"#"artifact": "closure/runtime-systems-engineer.md"#' "$R/signed/signoff/kernel-performance-owner.json"
rc=$(code $OPR verify "$R/signed")
check "a record pointed at another role's artifact no longer verifies (4)" sh -c "test $rc = 4 && grep -q '^kernel-performance-owner (kernel-owner@example.org): bad signature' $T/out"
check "history show of a missing database exits 2 and creates nothing" sh -c "test \$($OPR history show --db $R/none.db 2>$R/e >/dev/null; echo \$?) = 2 && ! test -e $R/none.db && test \$(wc -l <$R/e) = 1"
check "history show --run takes hex only (2)" test "$(code $OPR history show --db "$R/hist.db" --run "%")" = 2
