"""Accuracy of logdoctor's diagnosis on labelled runs: measured, not asserted.

    python benchmarks/accuracy.py                      # sample_runs/ with sample_runs/labels.json
    python benchmarks/accuracy.py --check              # exit 1 when a target is missed
    python benchmarks/accuracy.py other/labelled/ --labels other/labels.json
    python benchmarks/accuracy.py --survey ../shared/real-logs --plots /tmp/plots   # unlabelled: list what fires

Labels: `labels.json` maps a run id (the run's top-level folder under the
labelled root) to `{"codes": [...], "healthy": bool, ...}`; `codes` lists every
code a careful reader would accept for that run, the main one first.

Definitions (what the numbers mean):

* a run *fires* a code when it has a finding of that code with severity
  `warning` or `critical` (`info` findings are remarks, never predictions);
* the *top finding* is the first such finding in the ranked order logdoctor
  reports (root causes before symptoms);
* **top-1 accuracy** (faulty runs = `healthy` false): share whose top finding's
  code is one of the label's codes; a faulty run with nothing firing is a miss;
* **false-alarm rate** (healthy runs): share with any warning or critical finding;
* per-code **precision** = runs firing the code whose label lists it / runs
  firing it; **recall** = runs whose label lists the code and that fire it /
  runs whose label lists it (any rank, not only top-1);
* **calibration**: every fired finding is scored correct when its code is in
  the run's label; per confidence band, the share correct should rise with
  the band.

Targets (`--check`): top-1 >= 0.95 and false alarm <= 0.02. A labelled run
that logdoctor does not find at all counts as a miss (faulty) or is reported
as missing (healthy).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from logdoctor.diagnose import analyze, rank  # noqa: E402
from logdoctor.model import Diagnosis, Finding, RunDiagnosis  # noqa: E402
from logdoctor.report.text import verdict  # noqa: E402

FIRING = ("critical", "warning")
BANDS = ((0.0, 0.6), (0.6, 0.75), (0.75, 0.9), (0.9, 1.01))


@dataclass
class Scored:
    """One labelled run with what logdoctor said about it."""

    run_id: str
    label: dict
    findings: list[Finding] = field(default_factory=list)
    found: bool = True

    @property
    def expected(self) -> list[str]:
        return [] if self.label.get("healthy") else list(self.label.get("codes") or [])

    @property
    def fired(self) -> list[Finding]:
        return [f for f in self.findings if f.severity in FIRING]

    @property
    def top(self) -> str:
        return self.fired[0].code if self.fired else "none"


def load_labels(path: Path) -> dict[str, dict]:
    try:
        labels = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SystemExit(f"accuracy: {path}: labels file not found") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise SystemExit(f"accuracy: {path}: not a readable labels JSON ({exc})") from None
    if not isinstance(labels, dict) or not all(isinstance(v, dict) for v in labels.values()):
        raise SystemExit(f"accuracy: {path}: expected {{run_id: {{codes, healthy, ...}}}}")
    return labels


def run_id_of(rd: RunDiagnosis) -> str:
    """The labelled run a diagnosed run belongs to: its top-level folder under the analysed root."""
    return Path(rd.run.name).parts[0] if rd.run.name not in ("", ".") else "."


def score(diagnosis: Diagnosis, labels: dict[str, dict]) -> list[Scored]:
    """Pair every label with the diagnosis of its run (several runs in one folder are ranked together)."""
    by_id: dict[str, list[Finding]] = defaultdict(list)
    for rd in diagnosis.runs:
        by_id[run_id_of(rd)].extend(rd.findings)
    return [
        Scored(run_id, label, rank(by_id[run_id]) if run_id in by_id else [], found=run_id in by_id)
        for run_id, label in sorted(labels.items())
    ]


def metrics(scored: list[Scored]) -> dict:
    faulty = [s for s in scored if not s.label.get("healthy")]
    healthy = [s for s in scored if s.label.get("healthy")]
    top1_hits = [s for s in faulty if s.top in s.expected]
    alarms = [s for s in healthy if s.fired]
    codes = sorted({c for s in scored for c in s.expected} | {f.code for s in scored for f in s.fired})
    per_code = {}
    for code in codes:
        fires = [s for s in scored if any(f.code == code for f in s.fired)]
        wanted = [s for s in scored if code in s.expected]
        tp = sum(1 for s in fires if code in s.expected)
        per_code[code] = {
            "labelled": len(wanted),
            "fired": len(fires),
            "tp": tp,
            "precision": tp / len(fires) if fires else None,
            "recall": sum(1 for s in wanted if any(f.code == code for f in s.fired)) / len(wanted) if wanted else None,
        }
    confusion = Counter((s.expected[0] if s.expected else "healthy", s.top) for s in scored)
    bands = []
    for lo, hi in BANDS:
        inside = [(f, s) for s in scored for f in s.fired if lo <= f.confidence < hi]
        correct = sum(1 for f, s in inside if f.code in s.expected)
        bands.append({"band": f"[{lo:.2f}, {min(hi, 1.0):.2f}]", "findings": len(inside), "correct": correct,
                      "share_correct": correct / len(inside) if inside else None})
    return {
        "runs": len(scored),
        "faulty": len(faulty),
        "healthy": len(healthy),
        "missing": [s.run_id for s in scored if not s.found],
        "top1": len(top1_hits) / len(faulty) if faulty else None,
        "false_alarm": len(alarms) / len(healthy) if healthy else None,
        "per_code": per_code,
        "confusion": {f"{a} -> {b}": n for (a, b), n in sorted(confusion.items())},
        "calibration": bands,
        "top1_misses": [
            {"run": s.run_id, "expected": s.expected, "got": [(f.code, round(f.confidence, 2)) for f in s.fired]}
            for s in faulty if s.top not in s.expected
        ],
        "false_alarms": [
            {"run": s.run_id, "got": [(f.code, round(f.confidence, 2), f.title) for f in s.fired]} for s in alarms
        ],
    }


def fmt(x) -> str:
    return "  -  " if x is None else f"{x:5.2f}"


def print_report(name: str, m: dict, seconds: float) -> None:
    print(f"== {name}: {m['runs']} labelled runs ({m['faulty']} faulty, {m['healthy']} healthy), analysed in {seconds:.1f} s")
    print(f"top-1 accuracy (faulty): {fmt(m['top1'])}    false-alarm rate (healthy): {fmt(m['false_alarm'])}")
    if m["missing"]:
        print(f"labelled but not found on disk: {', '.join(m['missing'])}")
    if m.get("unlabelled"):
        print(f"found on disk but not labelled (not scored): {', '.join(m['unlabelled'])}")
    print(f"\n{'code':<22}{'labelled':>9}{'fired':>7}{'tp':>5}{'precision':>11}{'recall':>8}")
    for code, c in m["per_code"].items():
        print(f"{code:<22}{c['labelled']:>9}{c['fired']:>7}{c['tp']:>5}{fmt(c['precision']):>11}{fmt(c['recall']):>8}")
    print("\nconfusion (label's main code -> top finding):")
    for key, n in m["confusion"].items():
        a, b = key.split(" -> ")
        mark = "" if a == b or (a == "healthy" and b == "none") else "   <-- off"
        print(f"  {key:<44}{n:>4}{mark}")
    print("\ncalibration (fired findings by confidence band):")
    for b in m["calibration"]:
        print(f"  {b['band']:<14}{b['findings']:>4} findings, {fmt(b['share_correct'])} correct")
    for miss in m["top1_misses"]:
        print(f"  top-1 miss  {miss['run']}: expected {miss['expected']}, got {miss['got'] or 'nothing'}")
    for alarm in m["false_alarms"]:
        print(f"  false alarm {alarm['run']}: {alarm['got']}")
    print()


def survey(path: Path, plots: Path | None) -> None:
    """Unlabelled logs: what fires where, for eyeballing (optionally with a PNG per run)."""
    start = time.perf_counter()
    diagnosis = analyze(path)
    print(f"== survey {path}: {len(diagnosis.runs)} runs in {time.perf_counter() - start:.1f} s")
    plotter = None
    if plots:
        from logdoctor.report.plots import RunPlotter

        plots.mkdir(parents=True, exist_ok=True)
        plotter = RunPlotter()
    for rd in diagnosis.runs:
        fired = ", ".join(f"{f.code}({f.confidence:.2f})" for f in rd.findings if f.severity in FIRING) or "-"
        print(f"  {verdict(rd):<12}{rd.run.name[:70]:<72}{fired}")
        for f in rd.findings:
            if f.severity in FIRING:
                print(f"           {f.code}: {f.title}")
        if plotter:
            png = plotter.png(rd)
            if png:
                (plots / (path.name + "__" + rd.run.name.replace("/", "__") + ".png")).write_bytes(png)
    for line in diagnosis.errors:
        print(f"  skipped: {line}")
    print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", type=Path, help="labelled folders (default: sample_runs/, unless only surveying)")
    ap.add_argument("--labels", type=Path, action="append", help="labels file per folder (default: <folder>/labels.json)")
    ap.add_argument("--survey", type=Path, action="append", default=[], help="unlabelled folder: list what fires (repeatable)")
    ap.add_argument("--plots", type=Path, help="with --survey: write one PNG per surveyed run here")
    ap.add_argument("--json", type=Path, help="also write the metrics as JSON here")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--min-top1", type=float, default=0.95)
    ap.add_argument("--max-false-alarm", type=float, default=0.02)
    args = ap.parse_args(argv)
    if not args.folders and not args.survey:
        args.folders = [ROOT / "sample_runs"]
    if args.labels and len(args.labels) != len(args.folders):
        ap.error("give one --labels per labelled folder, or none")
    ok, results = True, {}
    for i, folder in enumerate(args.folders):
        if not folder.is_dir():
            print(f"accuracy: {folder}: not a folder", file=sys.stderr)
            return 2
        labels = load_labels(args.labels[i] if args.labels else folder / "labels.json")
        start = time.perf_counter()
        diagnosis = analyze(folder)
        m = metrics(score(diagnosis, labels))
        m["unlabelled"] = sorted({run_id_of(rd) for rd in diagnosis.runs} - set(labels))
        print_report(str(folder), m, time.perf_counter() - start)
        results[str(folder)] = m
        if (m["top1"] is not None and m["top1"] < args.min_top1) or (
            m["false_alarm"] is not None and m["false_alarm"] > args.max_false_alarm
        ) or m["runs"] == 0:
            ok = False
    for path in args.survey:
        survey(path, args.plots)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    if args.check:
        print("targets met" if ok else f"targets missed (top-1 >= {args.min_top1}, false alarm <= {args.max_false_alarm})")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # output piped into head & co.
        sys.stderr.close()
        sys.exit(0)
