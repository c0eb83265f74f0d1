#!/usr/bin/python3
# tests/xlsx_check.py WORKBOOK FINDINGS.json SAMPLES.csv: reads packet.xlsx back
# with openpyxl and checks it against the findings and samples it was built
# from. Exit 0 when every check holds, 1 with the failures listed, 77 when
# openpyxl is missing (the caller skips).
import csv
import json
import sys

try:
    import openpyxl
except ImportError:
    print("openpyxl is not installed")
    sys.exit(77)

SHEETS = ["Summary", "Findings", "Worksheet", "Validation", "Pipeline",
          "Samples", "Counters", "Environment", "Model"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def close(a, b, rel=1e-9):
    return a is not None and b is not None and abs(a - b) <= rel * max(1.0, abs(b))


def main(path, findings_path, samples_path):
    with open(findings_path) as fp:
        f = json.load(fp)
    with open(samples_path, newline="") as fp:
        samples = list(csv.reader(fp))[1:]
    wb = openpyxl.load_workbook(path)
    check(wb.sheetnames == SHEETS, "sheet names %r" % wb.sheetnames)
    if wb.sheetnames != SHEETS:
        return

    for name in SHEETS:
        ws = wb[name]
        check(ws.freeze_panes == "A2", "%s: frozen panes %r" % (name, ws.freeze_panes))
        check(bool(ws.auto_filter.ref), "%s: no autofilter" % name)
        check(ws.page_setup.orientation == "landscape", "%s: not landscape" % name)
        for row in ws.iter_rows():
            for c in row:
                check(c.data_type != "f", "%s!%s: formula %r" % (name, c.coordinate, c.value))

    blocks = f["blocks"]
    # Summary: verdict, reasons, per-block lines with the p95 ratio
    ws = wb["Summary"]
    items = {}
    reasons = []
    for a, b in ws.iter_rows(min_row=2, max_col=2, values_only=True):
        if a == "reason":
            reasons.append(b)
        elif a is not None:
            items[a] = b
    check(items.get("verdict") == f["verdict"], "Summary verdict %r" % items.get("verdict"))
    check(reasons == f["reasons"], "Summary reasons %r" % reasons)
    check(items.get("seed") == f["profile"]["seed"], "Summary seed")
    check(items.get("samples on sheet") == len(samples), "Summary sample count")
    head = [c.value for c in ws[1]]
    col = {h: i for i, h in enumerate(head) if h}
    for i, b in enumerate(blocks):
        row = [c.value for c in ws[i + 2]]
        check(row[col["block"]] == b["name"], "Summary block %d name" % i)
        p95 = [c for c in b["comparisons"] if c["metric"] == "p95"][0]
        if p95.get("available"):
            check(close(row[col["p95 ratio"]], p95["ratio"]), "Summary %s p95 ratio" % b["name"])
            check(close(row[col["p95 ratio lo"]], p95["lo"]), "Summary %s p95 lo" % b["name"])
        else:
            check(row[col["p95 ratio"]] is None, "Summary %s p95 ratio should be empty" % b["name"])
        base = [v for v in b["variants"] if v["variant"] == "baseline"][0]
        cand = [v for v in b["variants"] if v["variant"] == "candidate"][0]
        check(row[col["launches before"]] == base["launches"], "Summary launches before")
        check(row[col["launches after"]] == cand["launches"], "Summary launches after")
    check(ws.cell(2, col["p95 ratio"] + 1).number_format == "0.000", "Summary ratio format")
    check(len(ws._charts) == len(blocks), "Summary charts %d" % len(ws._charts))

    # Findings: one row per evidence item
    ws = wb["Findings"]
    n = sum(max(1, len(b["evidence"])) for b in f["bottlenecks"])
    # below the findings, after a blank row each: the rules, then the checks
    # and the verdict rules the packet points to
    nr = len(f.get("rules", []))
    cr = f.get("check_rules", {})
    nc = len(cr.get("checks", [])) + len(cr.get("verdicts", []))
    want = 1 + n + 1 + 1 + nr + 1 + 1 + nc
    check(ws.max_row == want, "Findings rows %d, expected %d" % (ws.max_row, want))
    check(ws.cell(1 + n + 2, 1).value == "rule (class)", "Findings: the rules' header")
    for i, rule in enumerate(f.get("rules", [])):
        check(ws.cell(1 + n + 3 + i, 1).value == rule["class"] and
              ws.cell(1 + n + 3 + i, 3).value == rule["threshold"], "Findings rule row %d" % i)
    r = 2
    for b in f["bottlenecks"]:
        for e in b["evidence"]:
            check(ws.cell(r, 1).value == b["block"] and ws.cell(r, 8).value == e["metric"],
                  "Findings row %d" % r)
            v = ws.cell(r, 9).value
            check(v is None if e["value"] is None else close(v, e["value"]),
                  "Findings row %d value %r" % (r, v))
            r += 1

    # Worksheet: plans, and the fusion and roofline charts
    ws = wb["Worksheet"]
    check(ws.max_row > len(f["worksheet"]), "Worksheet rows")
    for i, w in enumerate(f["worksheet"]):
        check(ws.cell(i + 2, 4).value == w["plan"], "Worksheet plan %d" % i)
        check(ws.cell(i + 2, 8).value == w["global_bytes"], "Worksheet bytes %d" % i)
        check(ws.cell(i + 2, 15).value == w["status"], "Worksheet status %d" % i)
    check(ws.cell(2, 8).number_format == "#,##0", "Worksheet bytes format")
    check(len(ws._charts) == 2, "Worksheet charts %d" % len(ws._charts))

    # Validation: status cells and PASS/WARN/FAIL colours (a dxf solid fill
    # carries its colour in bgColor)
    ws = wb["Validation"]
    for i, v in enumerate(f["validation"]):
        check(ws.cell(i + 2, 5).value == v["status"], "Validation status %d" % i)
        check(ws.cell(i + 2, 10).value == v["rollback_to"], "Validation rollback %d" % i)
    statuses = [ws.cell(i + 2, 5).value for i in range(len(f["validation"]))]
    check("FAIL" in statuses and "PASS" in statuses, "Validation lacks PASS and FAIL")
    rules = {}
    for rng in ws.conditional_formatting:
        for rule in rng.rules:
            check(str(rng.sqref).startswith("E2"), "Validation CF range %s" % rng.sqref)
            rules[tuple(rule.formula)] = rule.dxf.fill.bgColor.rgb if rule.dxf and rule.dxf.fill else None
    for word, colour in (("PASS", "C6EFCE"), ("WARN", "FFEB9C"), ("FAIL", "FFC7CE")):
        got = rules.get(('"%s"' % word,))
        check(got is not None and got.endswith(colour), "Validation CF %s: %r" % (word, got))

    # Pipeline: per block/variant results and one histogram chart each
    ws = wb["Pipeline"]
    r = 2
    hist = 0
    for b in blocks:
        for v in b["variants"]:
            check(ws.cell(r, 1).value == b["name"] and ws.cell(r, 2).value == v["variant"],
                  "Pipeline row %d" % r)
            check(close(ws.cell(r, 5).value, v["pipeline"]["p95_us"]), "Pipeline p95 row %d" % r)
            hist += 1 if v["pipeline"]["wait_hist"]["counts"] else 0
            r += 1
    check(len(ws._charts) == hist, "Pipeline charts %d" % len(ws._charts))

    # Samples: every row, as numbers
    ws = wb["Samples"]
    check(ws.max_row == 1 + len(samples), "Samples rows %d" % (ws.max_row - 1))
    got = [(a, b, c, d) for a, b, c, d in ws.iter_rows(min_row=2, max_col=4, values_only=True)]
    want = [(a, b, int(c), int(d)) for a, b, c, d in samples]
    check(got == want, "Samples values differ")
    check(ws.cell(2, 4).number_format == "#,##0", "Samples ns format")

    # Counters: unavailable ones keep an empty value and their reason
    ws = wb["Counters"]
    for i, c in enumerate(f["counters"]):
        v = ws.cell(i + 2, 4).value
        if c["available"]:
            check(close(v, c["value"]), "Counters %s value %r" % (c["name"], v))
        else:
            check(v is None, "Counters %s unavailable but %r" % (c["name"], v))
            check(ws.cell(i + 2, 7).value == c["reason"], "Counters %s reason" % c["name"])

    # Environment: host and overhead present
    ws = wb["Environment"]
    env = {(a, b): c for a, b, c in ws.iter_rows(min_row=2, max_col=3, values_only=True)}
    check(env.get(("host", "cpu_model")) == f["host"]["cpu_model"], "Environment cpu_model")
    check(close(env.get(("overhead", "clock_read_ns")), f["overhead"]["clock_read_ns"]),
          "Environment clock_read_ns")
    check(env.get(("profile", "metadata.firmware")) == f["profile"]["metadata"]["firmware"],
          "Environment firmware")

    # Model: modelled vs measured rows, or why the model is unvalidated
    ws = wb["Model"]
    mv = f.get("model_validation", {})
    rows = mv.get("rows", [])
    for i, r in enumerate(rows):
        check(ws.cell(i + 2, 1).value == r["block"], "Model block %d" % i)
        check(close(ws.cell(i + 2, 8).value, r["ratio"]), "Model ratio %d" % i)
    k = len(rows) + 3
    check(ws.cell(k, 1).value == "calibrated", "Model calibrated label")
    check(ws.cell(k, 2).value == bool(mv.get("calibrated")), "Model calibrated value")
    if not mv.get("calibrated"):
        check(ws.cell(k + 1, 2).value == mv.get("reason", "no model validation in findings"),
              "Model reason")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: xlsx_check.py WORKBOOK FINDINGS.json SAMPLES.csv")
        sys.exit(2)
    main(*sys.argv[1:])
    for msg in failures:
        print("FAIL: " + msg)
    sys.exit(1 if failures else 0)
