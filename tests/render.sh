#!/bin/sh
# tests/render.sh: the default packet as a reviewer opens it, in TAP form: its
# Markdown on GitHub's renderer (cmark-gfm), packet.html and that rendering in
# a browser (headless Chromium, a 1280x800 window) and packet.xlsx in
# LibreOffice must put the decision on the first screen: the verdict and its
# reason, each block's p95 baseline -> candidate with launches, reuse and
# GLOBAL traffic, and what each owner must do now. A tool the host lacks makes
# its checks skipped, never passed.
#
#   sh tests/render.sh [PACKET_DIR]
#
# Without PACKET_DIR it runs fixtures/profiles/default.yaml with
# budget.seconds 2 (every block short of samples: the longest first screen the
# default profile gives). RENDER_OUT=DIR keeps the screenshots (packet.png,
# gfm.png) and the renderings there, for a person to look at.
OPR=${OPREVIEW:-./opreview}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
no() { n=$((n + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else no "$desc"; fi; }
t0=$(date +%s)

P=$1
if [ -z "$P" ]; then
	sed -e 's/^  seconds: 40$/  seconds: 2/' -e "s#key: \.\./owners#key: $PWD/fixtures/owners#" \
	    fixtures/profiles/default.yaml >"$T/default.yaml"
	$OPR run --profile "$T/default.yaml" --out "$T/p" --quiet >/dev/null 2>"$T/err"
	rc=$?
	case $rc in 0|10|11|12) ok "the default profile runs (exit $rc)";;
		*) no "the default profile exited $rc: $(head -c 300 "$T/err")"; echo "1..$n"; exit 1;; esac
	P=$T/p
fi
O=${RENDER_OUT:-$T/out}
mkdir -p "$O"
F=$P/findings.json

# What the first screen must carry, from findings.json: the verdict, its
# reason, the block names and the owner roles.
/usr/bin/python3 - "$F" >"$T/facts.json" <<'EOF'
import json, sys
f = json.load(open(sys.argv[1]))
out = {"verdict": f["verdict"], "exit_code": f["exit_code"], "reason": f["reasons"][0] if f["reasons"] else "",
       "blocks": [b["name"] for b in f["blocks"]], "roles": [o["role"] for o in f["owners"]]}
json.dump(out, sys.stdout)
EOF
[ -s "$T/facts.json" ] || { no "findings.json gives the verdict, reasons, blocks and owners"; echo "1..$n"; exit 1; }

# Checks the text of a first screen (stdin: what is above the fold, or above
# the first table) for the decision; prints what is missing.
first_screen() {
	/usr/bin/python3 -c '
import json, re, sys
facts = json.load(open(sys.argv[1]))
text = re.sub(r"\s+", " ", sys.stdin.read())
miss = []
for k in ("verdict", "reason"):
    if facts[k][:60] not in text:
        miss.append(k + " " + repr(facts[k][:60]))
words = ("p95 ", "\u2192", "launches ", "reuse ", "GLOBAL traffic ")
for b in facts["blocks"]:
    # the block line: an occurrence of its name followed by every word
    lines = [text[m.end():m.end() + 600] for m in re.finditer(re.escape(b), text)]
    if not any(all(w in l for w in words) for l in lines):
        miss.append("%s: p95, launches, reuse, GLOBAL traffic" % b)
if "What each owner must do now" not in text:
    miss.append("the owners heading")
for r in facts["roles"]:
    if r not in text:
        miss.append("owner " + r)
print("; ".join(miss))
sys.exit(1 if miss else 0)' "$T/facts.json"
}

# --- GitHub's renderer: cmark-gfm with GitHub's extensions ----------------------
if command -v cmark-gfm >/dev/null; then
	cmark-gfm -e table -e strikethrough -e autolink -e tagfilter "$P/packet.md" >"$O/gfm.html" 2>"$T/gfm.err"
	check "cmark-gfm renders packet.md" test -s "$O/gfm.html"
	tables_md=$(grep -c '^| --- |' "$P/packet.md")
	tables_html=$(grep -c '<table>' "$O/gfm.html")
	check "every Markdown table is a table in cmark-gfm's HTML ($tables_md, $tables_html)" test "$tables_md" = "$tables_html"
	check "no table row is left as text (a '| ' paragraph)" sh -c "! grep -q '^<p>| ' '$O/gfm.html'"
	# the part above the first table, as text
	sed -n '1,/<table>/p' "$O/gfm.html" | sed 's/<[^>]*>//g; s/&amp;/\&/g; s/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g' >"$T/gfm.txt"
	miss=$(first_screen <"$T/gfm.txt")
	check "cmark-gfm: the decision comes before any table${miss:+ (missing: $miss)}" test -z "$miss"
else
	for i in 1 2 3 4; do skip "cmark-gfm is not installed"; done
fi

# --- a browser: headless Chromium, 1280x800 ---------------------------------------
# The page is measured in the browser: a script appended to a copy writes the
# bottom edge of the owners' list and the first screen's text into the DOM,
# which --dump-dom prints.
measure() { # measure IN.html OUT.html
	sed 's#</body>#<script>window.addEventListener("load",function(){var h=[...document.querySelectorAll("p")].find(function(p){return p.textContent.indexOf("What each owner must do now")>=0;});var u=h\&\&h.nextElementSibling;var b=u?Math.round(u.getBoundingClientRect().bottom+window.scrollY):-1;var t="";document.querySelectorAll("h1,p,li").forEach(function(e){var r=e.getBoundingClientRect();if(r.top+window.scrollY<800){var c=e.cloneNode(true);c.querySelectorAll("ul,ol").forEach(function(l){l.remove();});t+=c.textContent+"\\n";}});var d=document.createElement("pre");d.id="first-screen";d.setAttribute("data-owners-bottom",b);d.textContent=t;document.body.appendChild(d);});</script></body>#' "$1" >"$2"
}
fits() { [ -n "$1" ] && [ "$1" -gt 0 ] && [ "$1" -le 800 ] && [ -z "$2" ]; }
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -n "$CHROME" ]; then
	for page in packet gfm; do
		src=$P/packet.html
		if [ $page = gfm ] && [ -s "$O/gfm.html" ]; then
			# cmark-gfm writes the body: a page around it, as a browser gets it
			{ printf '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>packet.md</title></head><body>\n'
			  cat "$O/gfm.html"; printf '</body></html>\n'; } >"$T/gfm-page.html"
			src=$T/gfm-page.html
		elif [ $page = gfm ]; then
			src=
		fi
		if [ ! -s "$src" ]; then
			for i in 1 2; do skip "$page: no HTML to open (cmark-gfm missing)"; done
			continue
		fi
		cp "$src" "$T/$page-shot.html"
		measure "$src" "$T/$page-measure.html"
		timeout 60 "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars \
			--screenshot="$O/$page.png" --window-size=1280,800 "file://$T/$page-shot.html" >/dev/null 2>&1
		check "$page: Chromium takes a 1280x800 screenshot ($O/$page.png)" test -s "$O/$page.png"
		timeout 60 "$CHROME" --headless --no-sandbox --disable-gpu --window-size=1280,800 \
			--virtual-time-budget=2000 --dump-dom "file://$T/$page-measure.html" 2>/dev/null >"$T/$page.dom"
		bottom=$(sed -n 's/.*data-owners-bottom="\(-\?[0-9]*\)".*/\1/p' "$T/$page.dom" | head -1)
		sed -n '/<pre id="first-screen"/,/<\/pre>/p' "$T/$page.dom" |
			sed 's/<[^>]*>//g; s/&amp;/\&/g; s/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g' >"$T/$page.txt"
		miss=$(first_screen <"$T/$page.txt")
		check "$page: the owners' actions end on the first screen (at ${bottom:-?} px of 800)${miss:+; missing above the fold: $miss}" \
			fits "$bottom" "$miss"
	done
else
	for i in 1 2 3 4; do skip "no Chromium (chromium, chromium-browser or google-chrome) is installed"; done
fi

# --- LibreOffice: the workbook's Summary sheet ------------------------------------
if command -v soffice >/dev/null; then
	# its own profile folder, so a running LibreOffice or a read-only HOME do not matter
	HOME=$T/lohome timeout 120 soffice --headless --norestore --convert-to csv --outdir "$T/lo" \
		"$P/packet.xlsx" >"$T/lo.log" 2>&1
	cp "$T/lo/packet.csv" "$O/summary.csv" 2>/dev/null
	check "LibreOffice opens packet.xlsx and writes its first sheet as CSV" test -s "$T/lo/packet.csv"
	check "its first sheet's first rows are the verdict, the exit code and the reason" /usr/bin/python3 -c '
import csv, json, sys
facts = json.load(open(sys.argv[1]))
rows = list(csv.reader(open(sys.argv[2], encoding="utf-8")))
first = [r[:2] for r in rows[:4]]
ok = first[0] == ["item", "value"] and first[1] == ["verdict", facts["verdict"]] and \
     first[2][0] == "exit code" and float(first[2][1]) == facts["exit_code"] and \
     first[3][0] == "reason" and first[3][1].startswith(facts["reason"][:60])
print("# Summary sheet: %r" % first)
sys.exit(0 if ok else 1)' "$T/facts.json" "$T/lo/packet.csv"
else
	for i in 1 2; do skip "LibreOffice (soffice) is not installed"; done
fi

echo "# render.sh: $(($(date +%s) - t0)) s; renderings in $O"
echo "1..$n"
