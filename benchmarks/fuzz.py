"""Mutation fuzzer for the promise "bad input gets one clear line, the good runs are still reported".

Each case is a folder holding a good run (a fixed sample, whose diagnosis is known) beside a
damaged copy of a run of some format: bytes flipped, cut, spliced; TFRecord lengths and CRCs
broken; ragged, wide and exotic CSVs; wrong-typed and deep JSON; YAML bombs and `!!python`
tags; odd MLflow stores; console logs with escape storms and enormous lines; hostile file and
folder names, symlink loops, folders nobody may read; broken `logdoctor.toml`. Cases are made
from a seed, so any outcome can be replayed (`--replay N`).

Permissions must apply as on a shared cluster. In-process, a worker runs `logdoctor analyze
CASE -o report.json` through the CLI's own entry point (typer's runner) under a 4 GiB
address-space cap, as root without the capabilities that bypass permissions (it cannot become
another user: see `without_bypass`); the parent kills a case after 30 s. Through the CLI, each
case is built as root, handed to an unprivileged user (nobody; the "another user's file" entries
stay another user's) and run as `python -m logdoctor analyze` by that user (setpriv). A user who
is not root builds and analyses as itself. Every case that is not ok is then run again alone
(`*-alone.jsonl`), and both outcomes are printed.

Outcomes: ok (read, or every problem one clear line), traceback, hang, out of memory, killed
by a signal (a SIGKILL the fuzzer did not send is the kernel's, not a hang), lost (the good run
missing or diagnosed differently), bad output (a control character from a log reached the report
or a skipped line), not built (the case builder failed: nothing reached logdoctor).

    python benchmarks/fuzz.py --inprocess 10000 --cli 700 --md docs/robustness.md
    python benchmarks/fuzz.py --replay 1234          # rebuild case 1234 into ./fuzz-case, to analyze it in the foreground

Run the long form under the suite lock: flock /tmp/logdoctor-suite.lock nice -n 10 python ...
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_runs"
GOOD = "kcsv_healthy_history"
HANG_S = 30
MEMORY = 4 << 30
#: Sample runs mutated, one per layout.
SEEDS = {
    "tensorboard": "tb_healthy_adam_constant",
    "tensorboard-new": "tbn_healthy_charlm_warmup_cosine",
    "keras-tb": "keras_healthy_short_10_epochs",
    "hf": "hf_healthy_linear_warmup",
    "lightning": "pl_healthy_onecycle_cnn",
    "csv": "csv_healthy_amp_charlm",
    "keras-csv": "kcsv_healthy_history",
    "mlflow": "mlf_healthy_short_10_epochs",
    "wandb": "wb_healthy_amp_digits",
}
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
OUTCOMES = ("ok", "traceback", "hang", "out of memory", "signal", "lost", "bad output", "not built")
#: The unprivileged user who analyses each CLI case (nobody), and another user owning the entries
#: of the "another user's file" mutation. The case is built as root, then handed to ANALYST.
ANALYST, OTHER = 65534, 12345


# --------------------------------------------------------------------------- seeds


def _curve(n: int = 60) -> list[tuple[int, float, float]]:
    return [(s * 10, 2.5 * 0.97**s + 0.05, 2.6 * 0.975**s + 0.12) for s in range(n)]


def _write_synthetic(kind: str, folder: Path) -> None:
    """Layouts the sample runs lack, written from one healthy curve."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = _curve()
    if kind == "wandb-jsonl":
        files = folder / "wandb" / "run-20240101_000000-abcd1234" / "files"
        files.mkdir(parents=True)
        with open(files / "wandb-history.jsonl", "w") as fh:
            for step, loss, val in rows:
                fh.write(json.dumps({"_step": step, "_timestamp": 1.7e9 + step, "train/loss": loss, "val/loss": val, "lr": 1e-3}) + "\n")
        (files / "wandb-summary.json").write_text(json.dumps({"train/loss": rows[-1][1]}))
        (files / "config.yaml").write_text("wandb_version: 1\nlr:\n  desc: null\n  value: 0.001\nbatch_size:\n  value: 32\n")
    elif kind == "wandb-ui-csv":
        lines = ["Step,myrun - train/loss,myrun - train/loss__MIN,myrun - train/loss__MAX,myrun - val/loss"]
        lines += [f"{s},{a},{a},{a},{b}" for s, a, b in rows]
        (folder / "wandb_export_2024-01-01T00_00_00.csv").write_text("\n".join(lines) + "\n")
    elif kind == "text":
        lines = ["Loading data...", "Model has 1.2M parameters"]
        lines += [f"epoch {s // 100} step {s} | train_loss {a:.4f} | lr 0.001" for s, a, _ in rows]
        lines += [f"[eval] step {s} val_loss {b:.4f}" for s, _, b in rows[::10]]
        (folder / "train.log").write_text("\n".join(lines) + "\n")
    elif kind == "tb-download-csv":  # TensorBoard's "Download CSV": one tag per file, the tag only in the name
        for tag, column in (("loss_train", 1), ("loss_val", 2)):
            body = [f"{1.7e9 + row[0]},{row[0]},{row[column]}" for row in rows]
            (folder / f"run-train-tag-{tag}.csv").write_text("\n".join(["Wall time,Step,Value"] + body) + "\n")
    elif kind == "ultralytics":
        head = "                  epoch,      train/box_loss,      train/cls_loss,   metrics/mAP50(B),        val/box_loss,      val/cls_loss"
        body = [f"{i + 1:>23},{a:>20.5f},{a / 2:>20.5f},{1 - b / 3:>20.5f},{b:>20.5f},{b / 2:>20.5f}" for i, (_, a, b) in enumerate(rows[:30])]
        (folder / "results.csv").write_text("\n".join([head] + body) + "\n")
        (folder / "args.yaml").write_text("task: detect\nmodel: yolov8n.pt\nepochs: 30\nlr0: 0.01\n")
    else:
        raise ValueError(kind)


SYNTHETIC = ("wandb-jsonl", "wandb-ui-csv", "text", "ultralytics", "tb-download-csv")


def place_seed(kind: str, folder: Path) -> None:
    if kind in SEEDS:
        shutil.copytree(SAMPLES / SEEDS[kind], folder, symlinks=True)
    else:
        _write_synthetic(kind, folder)


# --------------------------------------------------------------------------- mutations


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


#: A file this large is a hole made by an earlier mutation (2 GB of zeros, no disk): a later one
#: that read it whole would hold 2-4 GB in the builder and write the zeros out to disk.
HUGE = 256 << 20


def _pick(rng: random.Random, folder: Path, pattern: str = "") -> Path | None:
    files = [p for p in _files(folder) if re.search(pattern, p.name) and p.stat().st_size < HUGE]
    return rng.choice(files) if files else None


def m_flip(rng, folder):
    path = _pick(rng, folder)
    data = bytearray(path.read_bytes())
    for _ in range(rng.choice([1, 1, 2, 8, 64])):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    path.write_bytes(bytes(data))
    return f"flip bytes in {path.name}"


def m_truncate(rng, folder):
    path = _pick(rng, folder)
    data = path.read_bytes()
    cut = rng.choice([0, 1, rng.randrange(len(data) + 1), len(data) // 2, max(0, len(data) - 3)])
    path.write_bytes(data[:cut])
    return f"truncate {path.name} at {cut}"


def m_splice(rng, folder):
    path = _pick(rng, folder)
    data = path.read_bytes()
    junk = rng.choice([os.urandom(rng.randrange(1, 300)), data[: rng.randrange(len(data) + 1)], b"\x00" * 1000, b"\xff\xfe" * 50])
    at = rng.randrange(len(data) + 1)
    path.write_bytes(data[:at] + junk + data[at:])
    return f"splice {len(junk)} bytes into {path.name}"


def _records(data: bytes) -> list[int]:
    """Offsets of the TFRecord headers in an event file."""
    offsets, at = [], 0
    while at + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[at : at + 8])
        offsets.append(at)
        at += 16 + length
    return offsets


def m_tfrecord(rng, folder):
    path = _pick(rng, folder, r"tfevents")
    if path is None:
        return m_flip(rng, folder)
    data = bytearray(path.read_bytes())
    offsets = _records(bytes(data)) or [0]
    at = rng.choice(offsets)
    game = rng.choice(["huge", "zero", "random", "crc", "payload", "dup", "hole", "hole"])
    if game == "hole":
        return _hole(rng, path, at)
    if game == "huge":
        data[at : at + 8] = struct.pack("<Q", rng.choice([2**63 - 1, 2**40, 2**32 + 5, len(data) * 4]))
    elif game == "zero":
        data[at : at + 8] = struct.pack("<Q", 0)
    elif game == "random":
        data[at : at + 8] = os.urandom(8)
    elif game == "crc":
        data[at + 8 : at + 12] = os.urandom(4)
    elif game == "payload":
        for i in range(at + 12, min(len(data), at + 40)):
            data[i] = rng.randrange(256)
    else:
        data += data[at:]
    path.write_bytes(bytes(data))
    return f"tfrecord {game} at {at} of {path.name}"


def _hole(rng, path: Path, at: int) -> str:
    """A 2 GB hole (a preallocated file, a writer that crashed, a copy tool) at a record boundary
    or at the end: no disk is used, every byte of it reads as zero."""
    data = path.read_bytes()
    at = rng.choice([at, len(data)])
    with open(path, "wb") as fh:
        fh.write(data[:at])
        fh.seek(2 << 30, os.SEEK_CUR)
        fh.write(data[at:])
        fh.truncate()
    return f"tfrecord hole of 2 GB at {at} of {path.name}"


def m_event_proto(rng, folder):
    """Valid TFRecord framing around an absurd Event payload (wrong wire types, deep nesting, huge tags)."""
    from logdoctor.ingest.tfrecord import crc32c, masked

    def masked_crc32c(data: bytes) -> int:
        return int(masked(crc32c(data)))

    path = _pick(rng, folder, r"tfevents")
    if path is None:
        return m_flip(rng, folder)
    payload = rng.choice([
        b"\x11" + struct.pack("<d", 1.7e9) + b"\x18\x05" + b"\x2a" + b"\xff\xff\xff\xff\x0f",
        b"\x2a\x80\x80\x80\x80\x10" + b"\x0a" * 64,
        b"\x2a" + bytes([100]) + b"\x0a\x62\x0a" + bytes([90]) + b"x" * 90 + b"\x15\x00\x00\xc0\x7f",
        b"\x18" + b"\xff" * 10 + b"\x01",
        b"\x2a\x05\x0a\x03\x0a\x01" + b"\x12" * 3,
        os.urandom(rng.randrange(1, 200)),
    ])
    header = struct.pack("<Q", len(payload))
    record = header + struct.pack("<I", masked_crc32c(header)) + payload + struct.pack("<I", masked_crc32c(payload))
    data = path.read_bytes()
    at = rng.choice(_records(data) or [0])
    path.write_bytes(data[:at] + record * rng.choice([1, 1, 50]) + data[at:])
    return f"absurd event record in {path.name}"


def m_csv(rng, folder):
    path = _pick(rng, folder, r"\.csv$")
    if path is None:
        return m_splice(rng, folder)
    lines = path.read_text(errors="replace").splitlines()
    game = rng.choice(["ragged", "wide", "wide-header", "header-repeat", "step", "step-column", "dup-step", "hostile-header", "blank", "quotes", "bom-nul", "long"])
    if game == "ragged" and len(lines) > 2:
        for _ in range(rng.randrange(1, 20)):
            i = rng.randrange(1, len(lines))
            lines[i] = lines[i] + ",1" * rng.randrange(0, 30) if rng.random() < 0.5 else lines[i][: rng.randrange(len(lines[i]) + 1)]
    elif game == "wide":
        n = rng.choice([200, 2000, 5000, 100_000])
        lines = [line + "".join(f",c{j}" if i == 0 else ",0.5" for j in range(n)) for i, line in enumerate(lines)]
    elif game == "wide-header" and lines:  # the header alone is wide: a million names over narrow rows
        lines[0] += "".join(f",h{j}" for j in range(1_000_000))
    elif game == "header-repeat" and lines:
        for _ in range(rng.randrange(1, 5)):
            lines.insert(rng.randrange(1, len(lines) + 1), lines[0])
    elif game == "step" and len(lines) > 1:
        exotic = ["-1", "1e30", "nan", "inf", "3.5", "0x10", "", "1,000", "2024-01-01", "9" * 40, "-0"]
        for i in range(1, len(lines)):
            if rng.random() < 0.3:
                cells = lines[i].split(",")
                cells[rng.randrange(len(cells))] = rng.choice(exotic)
                lines[i] = ",".join(cells)
    elif game == "step-column" and len(lines) > 1:
        at = _step_cell(lines[0])
        column = rng.choice(EXOTIC_STEPS)
        for i in range(1, len(lines)):
            cells = lines[i].split(",")
            if at < len(cells):
                cells[at] = column(i)
            lines[i] = ",".join(cells)
    elif game == "dup-step" and lines:
        cells = lines[0].split(",")
        name = cells[_step_cell(lines[0])]
        for _ in range(rng.randrange(1, 4)):
            cells[rng.randrange(len(cells))] = name
        lines[0] = ",".join(cells)
    elif game == "hostile-header" and lines:
        cells = lines[0].split(",")
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(cells))
            cells[at] = rng.choice(HOSTILE_TEXT).replace(",", "") + cells[at]
        lines[0] = ",".join(cells)
    elif game == "blank":
        lines = [re.sub(r"[^,]+", "", line) if rng.random() < 0.5 else line for line in lines]
    elif game == "quotes" and lines:
        lines[rng.randrange(len(lines))] += '"unterminated,' + "\n" * 3
    elif game == "bom-nul":
        path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).replace(",", ",\x00", rng.randrange(50)).encode())
        return f"csv {game} in {path.name}"
    elif game == "long" and lines:
        lines.append("1," + "9" * rng.choice([10_000, 1_000_000]))
    path.write_text("\n".join(lines) + "\n")
    return f"csv {game} in {path.name}"


#: Whole step columns of one odd kind, by row number: strings, dates, floats, repeats, decreasing, huge.
EXOTIC_STEPS = [
    lambda i: f"step-{i}", lambda i: f"2024-01-01T00:00:{i % 60:02d}", lambda i: f"{i * 0.5}", lambda i: "7",
    lambda i: str(10_000 - i), lambda i: str(2**70 + i), lambda i: str(-i), lambda i: f"{i}e3", lambda i: "" if i % 2 else str(i),
]
#: Text that must never reach a report raw: markup, tags, escapes, bidi overrides.
HOSTILE_TEXT = [
    "<script>x</script>", "<img src=x onerror=pwn>", "[bold red]markup[/]", "\x1b[31mred\x1b[0m",
    "**bold**|pipe|", "`tick`", "loss\u202e", "\x07bell", "\x9b2J", 'q" onmouseover="pwn',
]
#: Raw tags from HOSTILE_TEXT and the console markup game; any in an HTML or Markdown report is bad output.
RAW_TAGS = ("<script>x</script>", "<img src=x onerror=pwn>", "<svg onload=pwn>", "<script>alert(1)</script>", 'onmouseover="pwn')


def _step_cell(header: str) -> int:
    """Index of the step-like column of a CSV header (else the first)."""
    cells = [c.strip().lower() for c in header.split(",")]
    return next((i for i, c in enumerate(cells) if c in ("step", "epoch", "global_step", "_step", "iteration")), 0)


def _deep(n: int, kind: str = "[") -> str:
    return "[" * n + "]" * n if kind == "[" else '{"a":' * n + "1" + "}" * n


def m_json(rng, folder):
    path = _pick(rng, folder, r"\.(json|jsonl)$")
    if path is None:
        return m_splice(rng, folder)
    text = path.read_text(errors="replace")
    game = rng.choice(["types", "deep", "deep-line", "wide-row", "numbers", "not-object", "huge-string", "dup-keys", "hostile-keys"]
                      + (["sparse-wide"] * 2 if path.name == "wandb-history.jsonl" else []))
    if game == "sparse-wide":
        return _sparse_wide(rng, path)
    if game == "types":
        try:
            data = json.loads(text.splitlines()[0] if path.suffix == ".jsonl" else text)
        except ValueError:
            data = {}
        if isinstance(data, dict) and data:
            key = rng.choice(list(data))
            data[key] = rng.choice(["x", [], {}, None, True, [1, "a"], {"_type": "histogram"}, -1e308, 2**70, [{"step": "a"}]])
            if isinstance(data.get("log_history"), list) and data["log_history"] and rng.random() < 0.5:
                entry = rng.choice(data["log_history"])
                if isinstance(entry, dict) and entry:
                    entry[rng.choice(list(entry))] = rng.choice(["x", None, [], {"a": 1}, 1e400, True])
            text = json.dumps(data) + ("\n" + "\n".join(text.splitlines()[1:]) if path.suffix == ".jsonl" else "")
    elif game == "deep":
        text = text[: len(text) // 2] + _deep(rng.choice([100, 1000, 100_000]), rng.choice("[{")) + text[len(text) // 2 :]
    elif game == "deep-line":  # one valid line (a history row, a log_history entry) holding a value nested deep
        deep = _deep(rng.choice([400, 1000, 100_000]), rng.choice("[{"))
        lines = text.splitlines() or [""]
        at = rng.randrange(len(lines))
        lines[at] = lines[at].replace("{", '{"deep": ' + deep + ", ", 1) if "{" in lines[at] else deep
        text = "\n".join(lines) + "\n"
    elif game == "wide-row":  # one line of a history row (or the document's first dict) with 100,000 or 200,000 keys
        wide = ", ".join(f'"k{j}": 0.5' for j in range(rng.choice([100_000, 200_000])))
        text = text.replace("{", "{" + wide + ", ", 1)
    elif game == "numbers":
        text = re.sub(r"\d+\.\d+", lambda m: rng.choice([m.group(), "1e400", "NaN", "-Infinity", "1" * 400, "0.0"]), text)
    elif game == "not-object":
        text = rng.choice(["[]", "null", '"x"', "1", "[" + text + "]", ""])
    elif game == "huge-string":
        text = text.replace('"', '"' + "A" * rng.choice([1000, 5_000_000]), 1)
    elif game == "hostile-keys":
        text = text.replace('{"', '{' + json.dumps(rng.choice(HOSTILE_TEXT))[:-1], rng.randrange(1, 4))
    else:
        text = text.replace("{", '{"step": "a", "step": 1, ', 3)
    path.write_text(text)
    return f"json {game} in {path.name}"


def _sparse_wide(rng, path: Path) -> str:
    """A W&B history as per-class evaluation logs it: `loss` every step, hundreds of eval metrics
    every thousand steps (100,000 lines, ~10 MB): it must stay long, never become a dense frame."""
    lines, metrics = rng.choice([20_000, 100_000]), rng.choice([300, 1000])
    with open(path, "w") as fh:
        for step in range(lines):
            row = {"_step": step, "_runtime": step * 0.1, "train/loss": 2.5 * 0.99997**step + 0.05}
            if step % 1000 == 999:
                row.update({f"eval/class_{k}_f1": 0.5 + (k % 7) / 20 for k in range(metrics)})
            fh.write(json.dumps(row) + "\n")
    return f"json sparse-wide {lines} lines x {metrics} eval metrics in {path.name}"


def _bomb(levels: int) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    return "\n".join(lines + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]) + "\n"


#: A file only a `!!python` tag that ran would create.
PWNED = Path(tempfile.gettempdir()) / "logdoctor-fuzz-pwned"
YAML_BAD = [
    lambda rng: _bomb(rng.choice([5, 9, 12])),
    lambda rng: "a: " + "[" * rng.choice([50, 2000, 50_000]) + "]" * 50_000 + "\n",
    lambda rng: f"x: !!python/object/apply:os.system ['touch {PWNED}']\n",
    lambda rng: "!!python/object/new:subprocess.Popen [['true']]\n",
    lambda rng: "lr: !!binary aGVsbG8=\nx: !!set {a, b}\nt: 2024-01-01\n",
    lambda rng: "key: " + "v" * 5_000_000 + "\n",
    lambda rng: "\n".join(f"k{i}: {i}" for i in range(rng.choice([1000, 200_000]))) + "\n",
    lambda rng: "- a\n- b\n",
    lambda rng: "a: &x b\n<<: *x\n",
    lambda rng: "{{{{: : :\n\t- \x00",
]


def m_yaml(rng, folder):
    path = _pick(rng, folder, r"\.yaml$")
    if path is None or rng.random() < 0.2:
        path = folder / rng.choice(["hparams.yaml", "config.yaml", "args.yaml", "meta.yaml"])
    path.write_text(rng.choice(YAML_BAD)(rng))
    return f"yaml into {path.name}"


def m_mlflow(rng, folder):
    metrics = next((p for p in folder.rglob("metrics") if p.is_dir()), None)
    if metrics is None:
        return m_flip(rng, folder)
    run = metrics.parent
    game = rng.choice(["file-for-folder", "nested", "deleted", "garbage-lines", "exotic-step", "empty-meta", "stray-entry"])
    if game == "file-for-folder":
        shutil.rmtree(metrics)
        metrics.write_text("1 2 3\n")
    elif game == "nested":
        (metrics / "a" / "b").mkdir(parents=True, exist_ok=True)
        (metrics / "a" / "b" / "c").write_text("1700000000000 0.5 1\n1700000000001 0.4 2\n")
        (metrics / "empty").mkdir(exist_ok=True)
    elif game == "deleted":
        meta = run / "meta.yaml"
        meta.write_text(meta.read_text() + "\nlifecycle_stage: deleted\n")
    elif game == "garbage-lines":
        target = rng.choice(sorted(p for p in metrics.iterdir() if p.is_file()) or [metrics / "x"])
        target.write_text(rng.choice(["x y z\n", "1 2\n" * 3, "1 nan 3\n1 inf 4\n", "\x00\x00", "1 2 3 4 5 6\n", "1 2 -9999999999999999999999\n"]))
    elif game == "exotic-step":  # one line of a metric file whose step no integer holds
        target = rng.choice(sorted(p for p in metrics.iterdir() if p.is_file()) or [metrics / "x"])
        lines = target.read_text(errors="replace").splitlines() or ["1700000000000 0.5 0"]
        at = rng.randrange(len(lines))
        cells = lines[at].split()
        lines[at] = " ".join(cells[:2] + [rng.choice(["1e19", "inf", "-inf", "nan", "9223372036854775808", "-1e400", "1.5", "x"])])
        target.write_text("\n".join(lines) + "\n")
    elif game == "empty-meta":
        (run / "meta.yaml").write_text("")
    else:
        (run.parent / "stray").write_text("not a run\n")
        (run.parent / "0000").mkdir(exist_ok=True)
    return f"mlflow {game}"


def m_wandb(rng, folder):
    path = _pick(rng, folder, r"\.wandb$")
    if path is None:
        return m_json(rng, folder)
    data = bytearray(path.read_bytes())
    game = rng.choice(["block-header", "record-length", "flip-body", "cut-block"])
    block = 32768
    at = 7 + rng.randrange(max(1, (len(data) - 7) // 64)) * 64  # somewhere past the 7-byte file header
    at = min(at, max(0, len(data) - 8))
    if game == "block-header":
        i = rng.randrange(0, max(1, len(data) // block + 1)) * block + (7 if rng.random() < 0.5 else 0)
        data[i : i + 7] = os.urandom(7)
    elif game == "record-length":
        data[at + 4 : at + 6] = rng.choice([b"\xff\xff", b"\x00\x00", os.urandom(2)])
    elif game == "flip-body":
        for _ in range(16):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    else:
        data = data[: rng.randrange(len(data) + 1)] + data[rng.randrange(len(data) + 1) :]
    path.write_bytes(bytes(data))
    return f"wandb {game} in {path.name}"


def m_console(rng, folder):
    path = _pick(rng, folder, r"\.(log|txt|out)$") or folder / "train.log"
    text = path.read_text(errors="replace") if path.exists() else "epoch 1 step 1 loss 0.5\n" * 5
    game = rng.choice(["escapes", "long-line", "long-records", "many-values", "cr-storm", "binary", "markup"])
    lines = text.splitlines()
    if game == "escapes":
        storm = ["\x1b[31m", "\x1b[2K\r", "\x1b]8;;http://x\x07link\x1b]8;;\x07", "\x1b[?25l", "\x9b", "\x07", "\x1b[1000D"]
        lines = [rng.choice(storm) * rng.randrange(1, 50) + line + rng.choice(storm) for line in lines]
    elif game == "long-line":
        lines.insert(rng.randrange(len(lines) + 1), "loss " + "9" * rng.choice([100_000, 10_000_000]))
    elif game == "long-records":  # a loop printing with end=" ": one line of records (300 kB or 1 MB)
        size, parts = rng.choice([300_000, 1_000_000]), []
        while len(parts) * 22 < size:
            parts.append(f"step {len(parts)} loss {2.5 * 0.999 ** len(parts):.4f}")
        lines.insert(rng.randrange(len(lines) + 1), " ".join(parts))
    elif game == "many-values":
        lines.insert(rng.randrange(len(lines) + 1), "step 5 " + " ".join(f"m{i}: {i * 0.1:.3f}" for i in range(20_000)))
    elif game == "cr-storm":
        lines = ["\r".join([line] * rng.randrange(1, 200)) for line in lines]
    elif game == "binary":
        lines.insert(rng.randrange(len(lines) + 1), os.urandom(2000).decode("latin-1"))
    else:
        lines = [line.replace("loss", rng.choice(["[bold red]loss[/]", "<script>alert(1)</script>loss", "**loss**|", "loss\u202e"])) for line in lines]
    path.write_text("\n".join(lines) + "\n", errors="surrogateescape")
    return f"console {game} in {path.name}"


HOSTILE_NAMES = [
    b"r\xe9sultats", b"run\nnewline", b"\x1b[31mred\x1b[0m", b"[bold]markup[/bold]", b"<img src=x onerror=pwn>", b"<svg onload=pwn>",
    b"tab\there", b"--help", b"-q", b"lr=[0.1,0.2]", b"run*", b"seed?", b'q" onmouseover="pwn', b"a" * 250, b"\xff\xfe", b"emoji-\xf0\x9f\x94\xa5", b"nul\x7fdel", b"%s%n",
]


def m_names(rng, folder):
    if rng.random() < 0.3:
        victim = _pick(rng, folder)
        accented = os.fsdecode(victim.stem.encode("utf-8", "surrogateescape") + rng.choice([b"_\xe9t\xe9", b"_pr\xe9cision", b"_\xff", b"_\xc3\xa9"]))
        victim.rename(victim.with_name(accented + victim.suffix))
        if re.fullmatch(r"run-.+-tag-.+\.csv", victim.name):  # the tag alone changes: the run must still be read
            return f"hostile name {victim.with_name(accented + victim.suffix).name!r} of a TensorBoard download"
        return f"hostile file name {victim.with_name(accented + victim.suffix).name!r}"
    name = rng.choice(HOSTILE_NAMES)
    target = folder.parent / os.fsdecode(b"bad-" + name)
    folder.rename(target)
    if rng.random() < 0.5:
        inner = [p for p in target.rglob("*") if p.is_dir()]
        if inner:  # a layout's own folder (W&B's files/, mlruns/) renamed is no longer that layout
            victim = rng.choice(inner)
            victim.rename(victim.parent / os.fsdecode(rng.choice(HOSTILE_NAMES)))
            return f"hostile name {name!r}; renamed inner folder {victim.name!r}"
    return f"hostile name {name!r}"


def m_symlink(rng, folder):
    game = rng.choice(["loop", "self", "dangling", "to-root", "file-loop", "fifo", "device", "deep"])
    if game == "loop":
        (folder / "loop").mkdir(exist_ok=True)
        (folder / "loop" / "up").symlink_to("..")
    elif game == "self":
        (folder / "self").symlink_to("self")
    elif game == "dangling":
        (folder / "events.out.tfevents.1.host").symlink_to("/nonexistent/x")
    elif game == "to-root":
        (folder / "parent").symlink_to(folder.parent)
    elif game == "file-loop":
        (folder / "a.csv").symlink_to("b.csv")
        (folder / "b.csv").symlink_to("a.csv")
    elif game == "deep":  # 1,100 nested folders with a copy of a log at the bottom
        victim, deep = _pick(rng, folder), folder / "deep"
        deep.mkdir()
        for _ in range(1100):
            deep = deep / "d"
            deep.mkdir()
        shutil.copy(victim, deep / victim.name)
    elif game == "fifo":  # a log file replaced by a named pipe nobody writes to
        victim = _pick(rng, folder)
        victim.unlink()
        os.mkfifo(victim)
    else:
        victim = _pick(rng, folder)
        victim.unlink()
        victim.symlink_to(rng.choice(["/dev/zero", "/dev/urandom", "/dev/null"]))
    return f"symlink {game}"


def m_unreadable(rng, folder):
    """Mode 000 entries, folders listable but not enterable (`chmod -R 644`), and entries another
    user (OTHER) owns with mode 600/700."""
    dirs = [folder] + [p for p in folder.rglob("*") if p.is_dir() and not p.is_symlink()]  # not the case root through a link
    files = _files(folder)
    game = rng.choice(["mode", "mode", "not-enterable", "other-owner"])
    if game == "not-enterable":  # one folder and every folder under it
        top = rng.choice(dirs)
        for victim in sorted((d for d in dirs if d == top or top in d.parents), key=lambda d: -len(d.parts)):  # innermost first
            victim.chmod(rng.choice([0o644, 0o444]))
        return f"unreadable {game} {top.relative_to(folder.parent)}"
    victim = rng.choice(dirs + files)
    if game == "other-owner":  # the mode first: changing it takes the owner's right
        victim.chmod(0o700 if victim.is_dir() else 0o600)
        os.chown(victim, OTHER, OTHER, follow_symlinks=False)
    else:
        victim.chmod(rng.choice([0, 0o300, 0o200]) if victim.is_dir() else 0)
    return f"unreadable {game} {victim.relative_to(folder.parent)}"


TOML_BAD = [
    "garbage = = =", "\xff\xfe", "[rules.crawl]\nmax_relative_drop = nan\n", "[rules.crawl]\nmax_relative_drop = 'x'\n",
    "a = " + "[" * 5000 + "]" * 5000, "select = 5\n", "[roles]\ntrain_loss = '/(/'\n", "rules = 3\n",
    "[rules.spike]\nk_sigma = inf\n", "[rules]\nspike = [1]\n", "roles = []\n", "[roles]\nnope = ['x']\n",
    "select = ['ALL']\nignore = ['flat', 3]\n", "[rules.spike]\nk_sigma = -1e308\n",
    "[rules.spike]\nk_sigma = " + "[" * 3000 + "1" + "]" * 3000 + "\n", "[rules.spike]\nk_sigma = true\n",
    "[rules.crawl]\nmax_relative_drop = 1979-05-27\n", "[rules.spike]\nk_sigma = {a = 1}\n", "[rules.crawl]\nnope = 1\n",
    "[rules.nosuchrule]\nx = 1\n", "[rules.crawl]\nmax_relative_drop = -nan\n", "[rules.spike]\nk_sigma = '3'\n",
]


def m_toml(rng, folder):
    body = rng.choice(TOML_BAD)
    if rng.random() < 0.5:
        (folder.parent / "logdoctor.toml").write_text(body, errors="surrogateescape")
        return "broken logdoctor.toml"
    # the same keys under [tool.logdoctor]: top-level keys first, then the sub-tables renamed
    body = re.sub(r"(?m)^\[(?!\[)", "[tool.logdoctor.", body)
    (folder.parent / "pyproject.toml").write_text("[project]\nname = 'x'\n[tool.logdoctor]\n" + body, errors="surrogateescape")
    return "broken pyproject.toml"


#: (mutation, the seed layouts it fits or None for any), drawn uniformly.
MUTATIONS = [
    (m_flip, None), (m_truncate, None), (m_splice, None),
    (m_tfrecord, ("tensorboard", "tensorboard-new", "keras-tb")), (m_event_proto, ("tensorboard", "tensorboard-new", "keras-tb")),
    (m_csv, ("lightning", "csv", "keras-csv", "wandb-ui-csv", "ultralytics", "tb-download-csv")),
    (m_json, ("hf", "wandb-jsonl", "csv")), (m_yaml, ("lightning", "ultralytics", "wandb-jsonl", "mlflow")),
    (m_mlflow, ("mlflow",)), (m_wandb, ("wandb",)), (m_console, ("text",)),
    (m_names, None), (m_symlink, None), (m_unreadable, None), (m_toml, None),
]


def _draw(index: int, seed: int) -> tuple[random.Random, str]:
    """Case `index`'s random source and the layout of its damaged run, its first draw (so
    `--layout` picks cases without building them)."""
    rng = random.Random(f"{seed}:{index}")
    return rng, rng.choice(list(SEEDS) + list(SYNTHETIC))


def build_case(index: int, seed: int, where: Path) -> str:
    """Case `index`: a good run and one damaged run (one to three mutations) under `where`."""
    rng, kind = _draw(index, seed)
    shutil.copytree(SAMPLES / GOOD, where / "good")
    bad = where / "bad"
    place_seed(kind, bad)
    done = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        fits = [m for m, kinds in MUTATIONS if kinds is None or kind in kinds]
        mutate = rng.choice(fits)
        if not bad.exists():  # renamed by m_names
            bad = next(p for p in where.iterdir() if p.name not in ("good", "logdoctor.toml", "pyproject.toml"))
        try:
            done.append(mutate(rng, bad))
        except (OSError, ValueError, IndexError, AttributeError, RecursionError) as exc:  # no file left to pick; pathlib deep
            done.append(f"{mutate.__name__} not applied ({type(exc).__name__})")
        if done[-1].startswith(("symlink fifo", "symlink device")):
            break  # a later mutation would read the device or wait on the pipe itself
    return f"{kind}: " + "; ".join(done)


def release(where: Path) -> None:
    """Make every entry of a case removable again (the unreadable cases), then remove it (at any
    depth: Python 3.11's os.walk and shutil.rmtree recurse per level)."""
    subprocess.run(["chmod", "-R", "u+rwx", str(where)], stderr=subprocess.DEVNULL)
    subprocess.run(["rm", "-rf", str(where)], stderr=subprocess.DEVNULL)


# --------------------------------------------------------------------------- judging


#: Mutations that leave the damaged run's own files whole: its run must still be reported.
HARMLESS = re.compile(r"hostile name .*|symlink (loop|self|file-loop|deep)")


#: Mutations that only take away the right to read: the damaged run is read or named in a line.
HIDDEN = re.compile(r"unreadable .*")


def keeps_bad_run(what: str) -> bool:
    """True when every mutation of a case (`build_case`'s description) left its run readable."""
    return all(HARMLESS.fullmatch(part) for part in what.split(": ", 1)[-1].split("; "))


def only_hides_bad_run(what: str) -> bool:
    """True when a case's mutations left its run whole but took away the right to read some of it."""
    parts = what.split(": ", 1)[-1].split("; ")
    return any(HIDDEN.fullmatch(p) for p in parts) and all(HARMLESS.fullmatch(p) or HIDDEN.fullmatch(p) for p in parts)


def judge(rc: int | None, output: str, report: dict | None, baseline: list[str], what: str = "") -> tuple[str, str]:
    """(outcome, detail) of one analysis from its exit code, printed output and JSON report."""
    if "Traceback" in output or rc not in (0, 1, 2):
        return "traceback", output[-600:]
    if PWNED.exists():
        PWNED.unlink()
        return "bad output", "a !!python tag in a YAML sidecar ran"
    if CONTROL.search(output.replace("\n", "").replace("\t", "")):
        return "bad output", repr(output[:300])
    if report is None:
        lines = output.strip().splitlines()
        if rc == 2 and len(lines) == 1 and ("logdoctor.toml" in lines[0] or "pyproject.toml" in lines[0]):
            return "ok", ""  # a broken config stops the analysis with one line naming it
        return "lost", f"no report (exit {rc}): {output[-300:]}"
    runs = {r.get("run"): r for r in report.get("runs", [])}
    good = runs.get("good")
    if good is None or sorted(f["code"] for f in good.get("findings", [])) != baseline:
        return "lost", f"good run: {None if good is None else [f['code'] for f in good.get('findings', [])]} vs {baseline}"
    if keeps_bad_run(what) and len(runs) < 2:
        return "lost", f"a run only renamed or beside a harmless link was not read: {output[-300:]}"
    if only_hides_bad_run(what) and len(runs) < 2 and not report.get("skipped"):
        return "lost", "a run hidden by permissions vanished without a line"
    if _has_control(report):
        return "bad output", "control character in a report string"
    return "ok", ""


#: Mutations that put hostile text where a report shows it; their cases are also drawn as Markdown and HTML.
HOSTILE_MARKS = ("hostile", "markup", "escapes")


def judge_document(text: str, suffix: str) -> str:
    """Why a Markdown or HTML report is bad output ('' when it is not): a raw tag or a control
    character from a log reached it. In Markdown a tag is harmless inside a code span or after a
    backslash (shown literally)."""
    if suffix == ".md":
        prose = re.sub(r"(`+).*?\1", "", text)
        raw = re.search(r"(?<!\\)<(script|img|svg)\b", prose)
        raw = raw and raw.group()
    else:
        raw = next((tag for tag in RAW_TAGS if tag in text), None)
    if raw:
        return f"raw {raw!r} in the report"
    control = CONTROL.search(text.replace("\n", "").replace("\t", "").replace("\r", ""))
    return f"control character {control.group()!r} in the report" if control else ""


def documents(what: str, where: Path, analyze) -> str:
    """For a case with hostile text: the case drawn as Markdown and as HTML through `analyze(args)`
    (which returns nothing), reached through a Latin-1 named link and written to a Latin-1 named
    file beside it; the first problem found, else ''."""
    if not any(mark in what for mark in HOSTILE_MARKS) or not (where / "report.json").exists():  # a broken config: no report
        return ""
    root = Path(f"{where} r\udce9sultats")
    root.symlink_to(where)
    try:
        for suffix in (".md", ".html"):
            out = Path(f"{root}{suffix}")
            analyze(["analyze", str(root), "-o", str(out)] + (["--no-plots"] if suffix == ".md" else []))
            problem = judge_document(out.read_text(errors="surrogateescape"), suffix) if out.exists() else f"no {suffix} report"
            if problem:
                return f"{suffix}: {problem}"
    finally:
        for leftover in (root, Path(f"{root}.md"), Path(f"{root}.html")):
            leftover.unlink(missing_ok=True)
    return ""


def _has_control(obj) -> bool:
    if isinstance(obj, str):
        return bool(CONTROL.search(obj.replace("\n", "").replace("\t", "")))
    if isinstance(obj, dict):
        return any(_has_control(k) or _has_control(v) for k, v in obj.items())
    if isinstance(obj, list):
        return any(_has_control(v) for v in obj)
    return False


# --------------------------------------------------------------------------- the unprivileged user


#: HOME of ANALYST (root's is closed to it): matplotlib's and the caches' folders.
ANALYST_HOME = Path(tempfile.gettempdir()) / "logdoctor-fuzz-home"


def switches_user() -> bool:
    """Whether CLI cases are analysed as ANALYST: only root can hand a case over to another user."""
    return os.geteuid() == 0


def hand_over(where: Path) -> None:
    """Give a built case to ANALYST: every entry root owns (the other user's stay its own; links
    themselves, never what they point at)."""
    if switches_user():
        subprocess.run(["chown", "-R", "-h", "-P", "--from=0:0", f"{ANALYST}:{ANALYST}", str(where)], stderr=subprocess.DEVNULL)


@contextlib.contextmanager
def capped():
    """At most MEMORY of address space for what runs inside (the worker builds its cases uncapped:
    a builder's MemoryError is no outcome of logdoctor's)."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def without_bypass() -> list[str]:
    """The in-process worker's prefix: root without the capabilities that bypass permissions (its
    own entries then read as their owner's, mode 000 refused, OTHER's refused). It cannot become
    ANALYST itself: the interpreter's standard library lies under /root (mode 700), so every module
    imported lazily after the switch would fail to load."""
    if switches_user() and shutil.which("setpriv"):
        return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]
    return []


def as_analyst_command() -> list[str]:
    """The prefix that runs a command as ANALYST ([] when this user cannot switch)."""
    if switches_user() and shutil.which("setpriv"):
        return ["setpriv", f"--reuid={ANALYST}", f"--regid={ANALYST}", "--clear-groups", "--"]
    return []


# --------------------------------------------------------------------------- in-process worker


def worker(seed: int, indices: list[int], results: Path, baseline: list[str]) -> None:
    """Runs cases through the CLI's entry point in this process (as root without the permission
    bypass, see `without_bypass`); one JSON line per case, with the worker's peak resident memory
    so far. A case the builder could not make is "not built": no input reached logdoctor."""
    import resource

    from typer.testing import CliRunner

    from logdoctor.cli import app

    runner = CliRunner()
    with open(results, "a") as out:
        for index in indices:
            where = Path(tempfile.mkdtemp(prefix=f"fuzz{index}-"))
            out.write(json.dumps({"index": index, "started": True, "where": str(where)}) + "\n")
            out.flush()
            outcome, detail, what = "ok", "", ""
            try:
                what = build_case(index, seed, where)
            except Exception as exc:  # noqa: BLE001 - the builder's own failure, whatever it is
                outcome, detail = "not built", f"{type(exc).__name__}: {exc}"[:300]
            try:
                if outcome == "ok":
                    outcome, detail = _analyze_case(runner, app, where, what, baseline)
            except MemoryError:
                outcome, detail = "out of memory", what
            finally:
                release(where)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
            out.write(json.dumps({"index": index, "outcome": outcome, "what": what, "detail": detail, "worker_peak_mb": peak}) + "\n")
            out.flush()


def _analyze_case(runner, app, where: Path, what: str, baseline: list[str]) -> tuple[str, str]:
    """(outcome, detail) of `logdoctor analyze` on one built case, run under the cap."""
    report_path = where / "report.json"
    args = ["analyze", str(where), "-o", str(report_path)]
    with capped():
        os.chdir(where)
        try:
            result = runner.invoke(app, args, env={"NO_COLOR": "1", "COLUMNS": "120"})
        finally:
            os.chdir(ROOT)
        exc = result.exception
        if isinstance(exc, MemoryError):
            return "out of memory", what
        if exc is not None and not isinstance(exc, SystemExit):
            import traceback

            return "traceback", "".join(traceback.format_exception(exc)[-4:])[-800:]
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        outcome, detail = judge(result.exit_code, result.output, report, baseline, what)
        if outcome == "ok":
            problem = documents(what, where, lambda a: runner.invoke(app, a, env={"NO_COLOR": "1", "COLUMNS": "120"}))
            outcome, detail = ("bad output", problem) if problem else (outcome, detail)
    return outcome, detail


def baseline_codes() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(SAMPLES / GOOD, Path(tmp) / "good")
        out = subprocess.run(
            [sys.executable, "-m", "logdoctor", "analyze", tmp, "-f", "json"], capture_output=True, text=True, env=_env(), check=True
        )
    return sorted(f["code"] for f in json.loads(out.stdout)["runs"][0]["findings"])


def _env(analyst: bool = False) -> dict[str, str]:
    """The environment of an analysis; ANALYST's has a HOME it may use."""
    home = {"HOME": str(ANALYST_HOME)} if analyst and switches_user() else {}
    return {**os.environ, **home, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "120", "POLARS_MAX_THREADS": "2"}


def _available_mb() -> int:
    """The machine's MemAvailable now, in MB (-1 when /proc/meminfo cannot be read)."""
    try:
        line = next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemAvailable:"))
        return int(line.split()[1]) // 1024
    except (OSError, StopIteration, ValueError):
        return -1


def run_inprocess(seed: int, indices: list[int], results: Path, baseline: list[str]) -> None:
    """Workers over `indices`; a case past HANG_S is killed and recorded, the rest go on in a new worker.

    A worker that dies mid-case is told apart by who ended it: the fuzzer's own SIGKILL is a hang;
    a SIGKILL the fuzzer did not send is a "signal" (the kernel's OOM killer when the machine ran
    short), recorded with the worker's peak resident memory and the memory then available."""
    pending = list(indices)
    while pending:
        mark = results.stat().st_size if results.exists() else 0
        proc = subprocess.Popen(
            without_bypass() + [sys.executable, __file__, "--worker", json.dumps(pending), "--seed", str(seed), "--results", str(results),
             "--baseline", json.dumps(baseline)],
            env=_env(), start_new_session=True, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        )
        last, since, killed = None, time.monotonic(), False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.5)
            current = _last_started(results, mark)
            if current != last:
                last, since = current, time.monotonic()
            elif last is not None and time.monotonic() - since > HANG_S and not killed:
                os.killpg(proc.pid, signal.SIGKILL)
                killed = True
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        available = _available_mb()
        for row in _lines(results, mark):  # a case the worker died in is left to root here
            if row.get("where") and os.path.lexists(row["where"]):
                release(Path(row["where"]))
        finished = _finished(results, mark)
        started = _last_started(results, mark)
        if started is not None and started not in finished:
            if code == -signal.SIGKILL:
                outcome = "hang" if killed else "signal"
            elif code == -signal.SIGABRT:
                outcome = "out of memory"  # polars aborts when an allocation fails under the cap
            else:
                outcome = "signal" if code < 0 else "traceback"
            who = "" if code >= 0 else (" (sent by the fuzzer)" if killed else " (not sent by the fuzzer)")
            detail = f"worker exit {code}{who}; worker peak RSS {usage.ru_maxrss // 1024} MB; {available} MB available on the machine"
            with open(results, "a") as out:
                out.write(json.dumps({"index": started, "outcome": outcome, "what": "", "detail": detail}) + "\n")
            finished.add(started)
        pending = [i for i in pending if i not in finished]


def _lines(results: Path, mark: int) -> list[dict]:
    with open(results) as fh:
        fh.seek(mark)
        return [json.loads(line) for line in fh if line.strip().endswith("}")]


def _last_started(results: Path, mark: int) -> int | None:
    if not results.exists():
        return None
    started = [r["index"] for r in _lines(results, mark) if r.get("started")]
    return started[-1] if started else None


def _finished(results: Path, mark: int) -> set[int]:
    return {r["index"] for r in _lines(results, mark) if "outcome" in r}


# --------------------------------------------------------------------------- CLI


def run_cli(seed: int, indices: list[int], results: Path, baseline: list[str]) -> None:
    """Each case through `python -m logdoctor analyze` as ANALYST, capped at 4 GiB and HANG_S."""
    limit = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({MEMORY}, {MEMORY}))"
    entry = f"{limit}; import sys; sys.argv[0] = 'logdoctor'; from logdoctor.cli import main; main()"
    with open(results, "a") as out:
        for index in indices:
            where = Path(tempfile.mkdtemp(prefix=f"fuzzcli{index}-"))
            try:
                try:
                    what = build_case(index, seed, where)
                    hand_over(where)
                except Exception as exc:  # noqa: BLE001 - the builder's own failure, whatever it is
                    what, outcome, detail = "", "not built", f"{type(exc).__name__}: {exc}"[:300]
                else:
                    outcome, detail = _run_cli_case(entry, where, what, baseline)
            finally:
                release(where)
            out.write(json.dumps({"index": index, "outcome": outcome, "what": what, "detail": detail}) + "\n")
            out.flush()


def _run_cli_case(entry: str, where: Path, what: str, baseline: list[str]) -> tuple[str, str]:
    report_path = where / "report.json"
    cmd = as_analyst_command() + [sys.executable, "-c", entry, "analyze", str(where), "-o", str(report_path)]
    try:
        proc = subprocess.run(cmd, capture_output=True, env=_env(analyst=True), timeout=HANG_S, cwd=where)
    except subprocess.TimeoutExpired:
        return "hang", ""
    text = proc.stdout.decode("utf-8", "surrogateescape") + proc.stderr.decode("utf-8", "surrogateescape")
    if proc.returncode < 0:
        return ("out of memory" if proc.returncode == -signal.SIGABRT else "signal"), f"exit {proc.returncode}: {text[-400:]}"
    try:
        report = json.loads(report_path.read_text()) if report_path.exists() else None
    except ValueError:
        report = None
    outcome, detail = judge(proc.returncode, text, report, baseline, what)
    if outcome == "ok":
        try:
            problem = documents(what, where, lambda a: subprocess.run(
                cmd[: cmd.index("analyze")] + a, capture_output=True, env=_env(analyst=True), timeout=HANG_S, cwd=where))
        except subprocess.TimeoutExpired:
            return "hang", "drawing the Markdown or HTML report"
        outcome, detail = ("bad output", problem) if problem else (outcome, detail)
    return outcome, detail


# --------------------------------------------------------------------------- summary


def tally(results: Path) -> tuple[Counter, list[dict]]:
    rows = {}
    for row in _lines(results, 0):
        if "outcome" in row:
            rows[row["index"]] = row
    return Counter(r["outcome"] for r in rows.values()), [r for r in rows.values() if r["outcome"] != "ok"]


def _outcomes(results: Path) -> list[tuple[int, str]]:
    return [(index, row["outcome"]) for index, row in {r["index"]: r for r in _lines(results, 0) if "outcome" in r}.items()]


def _alone(results: Path) -> Path:
    return results.with_name(results.stem + "-alone.jsonl")


def rerun_alone(run, seed: int, results: Path, baseline: list[str]) -> None:
    """Every case that was not ok run again by itself, each in a fresh worker or process, into
    `<results>-alone.jsonl`: a failure that needs the long run's state or a loaded machine shows as
    one that does not reproduce; both counts are reported."""
    _, failures = tally(results)
    done = {index for index, _ in _outcomes(_alone(results))} if _alone(results).exists() else set()
    for index in sorted(r["index"] for r in failures if r["index"] not in done):
        run(seed, [index], _alone(results), baseline)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inprocess", type=int, default=0, help="cases through the CLI's entry point in a worker process")
    ap.add_argument("--cli", type=int, default=0, help="cases through `python -m logdoctor`")
    ap.add_argument("--start", type=int, default=0, help="first case index (chunks of a long run)")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--results", type=Path, default=Path("fuzz-results"), help="folder of JSON-lines results (appended)")
    ap.add_argument("--replay", type=int, help="rebuild this case into ./fuzz-case and print what it is")
    ap.add_argument("--layout", choices=list(SEEDS) + list(SYNTHETIC),
                    help="only the cases of the range whose damaged run has this layout (re-fuzz one reader after it changed)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--baseline", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.seed, json.loads(args.worker), args.results, json.loads(args.baseline))
        return
    if args.replay is not None:
        where = Path("fuzz-case")
        release(where)
        where.mkdir()
        print(build_case(args.replay, args.seed, where))
        return
    args.results.mkdir(parents=True, exist_ok=True)
    if switches_user():
        ANALYST_HOME.mkdir(exist_ok=True)
        os.chown(ANALYST_HOME, ANALYST, ANALYST)
    baseline = baseline_codes()
    started = time.monotonic()

    def cases(first: int, count: int) -> list[int]:
        return [i for i in range(first, first + count) if args.layout is None or _draw(i, args.seed)[1] == args.layout]

    if args.inprocess:
        run_inprocess(args.seed, cases(args.start, args.inprocess), args.results / "inprocess.jsonl", baseline)
        rerun_alone(run_inprocess, args.seed, args.results / "inprocess.jsonl", baseline)
    if args.cli:
        # CLI cases are drawn from their own range, so they are not the in-process ones again
        run_cli(args.seed, cases(1_000_000 + args.start, args.cli), args.results / "cli.jsonl", baseline)
        rerun_alone(run_cli, args.seed, args.results / "cli.jsonl", baseline)
    for name in ("inprocess", "cli"):
        path = args.results / f"{name}.jsonl"
        if path.exists():
            counts, failures = tally(path)
            print(f"{name}: {sum(counts.values())} cases " + ", ".join(f"{o} {counts[o]}" for o in OUTCOMES if counts[o]))
            alone = dict(_outcomes(_alone(path))) if _alone(path).exists() else {}
            for row in failures[:40]:
                again = f" (alone: {alone[row['index']]})" if row["index"] in alone else ""
                print(f"  #{row['index']} {row['outcome']}{again}: {row['what']}\n    {row['detail'][-300:]!r}")
    print(f"{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
