"""Checkpoint layouts are read into one shape, and unsafe pickles are refused."""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

from _replay_models import mlp, single_thread, train  # noqa: E402,F401

from logdoctor.cli import app  # noqa: E402
from logdoctor.replay import ReplayError  # noqa: E402
from logdoctor.replay.checkpoint import load_checkpoint  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trained():
    """A model, its AdamW optimizer, cosine scheduler and a GradScaler after a few steps."""
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    train(model, opt, 5, sched)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    return model, opt, sched, scaler


def test_plain_state_dict(tmp_path, trained):
    model = trained[0]
    torch.save(model.state_dict(), tmp_path / "w.pt")
    ckpt = load_checkpoint(tmp_path / "w.pt")
    assert ckpt.layout == "state_dict"
    assert set(ckpt.model) == set(model.state_dict())
    assert ckpt.optimizers == [] and ckpt.scaler is None


@pytest.mark.parametrize(
    "keys",
    [
        ("model", "optimizer", "scheduler", "scaler", "step"),
        ("model_state_dict", "optimizer_state_dict", "lr_scheduler", "grad_scaler", "global_step"),
    ],
)
def test_training_dict_with_aliases(tmp_path, trained, keys):
    model, opt, sched, scaler = trained
    m, o, s, sc, st = keys
    torch.save({m: model.state_dict(), o: opt.state_dict(), s: sched.state_dict(), sc: scaler.state_dict(), st: 5, "epoch": 1}, tmp_path / "c.pt")
    ckpt = load_checkpoint(tmp_path / "c.pt")
    assert ckpt.layout == "training_dict"
    assert ckpt.step == 5
    assert len(ckpt.optimizers) == 1 and len(ckpt.optimizers[0]["state"]) == 8
    assert ckpt.schedulers[0]["T_max"] == 100
    assert ckpt.scaler["scale"] == 1024.0


def lightning_dict(model, opt, sched, scaler, scaler_key="MixedPrecision"):
    """The dict Lightning 2.x `_CheckpointConnector.dump_checkpoint` writes (LightningModule holds `self.model`)."""
    return {
        "epoch": 3,
        "global_step": 120,
        "pytorch-lightning_version": "2.4.0",
        "state_dict": {f"model.{k}": v for k, v in model.state_dict().items()},
        "loops": {"fit_loop": {"state_dict": {}, "epoch_progress": {"total": {"ready": 4, "completed": 3}}}},
        "callbacks": {"ModelCheckpoint{'monitor': 'val_loss', 'mode': 'min'}": {"best_model_score": torch.tensor(0.5), "best_model_path": "x.ckpt"}},
        "optimizer_states": [opt.state_dict()],
        "lr_schedulers": [sched.state_dict()],
        scaler_key: scaler.state_dict(),
        "hparams_name": "kwargs",
        "hyper_parameters": {"lr": 1e-3, "hidden": 64},
    }


@pytest.mark.parametrize("scaler_key", ["MixedPrecision", "native_amp_scaling_state"])
def test_lightning_ckpt(tmp_path, trained, scaler_key):
    torch.save(lightning_dict(*trained, scaler_key=scaler_key), tmp_path / "epoch=3-step=120.ckpt")
    ckpt = load_checkpoint(tmp_path / "epoch=3-step=120.ckpt")
    assert ckpt.layout == "lightning"
    assert ckpt.step == 120
    assert all(k.startswith("model.") for k in ckpt.model)
    assert ckpt.optimizers[0]["param_groups"][0]["lr"] == pytest.approx(trained[1].param_groups[0]["lr"])
    assert ckpt.schedulers[0]["last_epoch"] == 5
    assert ckpt.scaler["scale"] == 1024.0


def hf_folder(folder: Path, trained, weights: str = "safetensors") -> Path:
    """A Hugging Face Trainer checkpoint-N/ folder, including a training_args.bin that must not be unpickled."""
    model, opt, sched, scaler = trained
    folder.mkdir(parents=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    if weights == "safetensors":
        safetensors_torch.save_file(state, str(folder / "model.safetensors"))
    elif weights == "sharded":
        names = list(state)
        first, second = names[: len(names) // 2], names[len(names) // 2 :]
        safetensors_torch.save_file({k: state[k] for k in first}, str(folder / "model-00001-of-00002.safetensors"))
        safetensors_torch.save_file({k: state[k] for k in second}, str(folder / "model-00002-of-00002.safetensors"))
        weight_map = {k: "model-00001-of-00002.safetensors" for k in first} | {k: "model-00002-of-00002.safetensors" for k in second}
        (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    else:
        torch.save(state, folder / "pytorch_model.bin")
    torch.save(opt.state_dict(), folder / "optimizer.pt")
    torch.save(sched.state_dict(), folder / "scheduler.pt")
    torch.save(scaler.state_dict(), folder / "scaler.pt")
    torch.save(argparse.Namespace(output_dir="x"), folder / "training_args.bin")
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 5, "max_steps": 400, "log_history": []}))
    return folder


@pytest.mark.parametrize("weights", ["safetensors", "sharded", "bin"])
def test_hf_trainer_folder(tmp_path, trained, weights):
    folder = hf_folder(tmp_path / "checkpoint-5", trained, weights)
    ckpt = load_checkpoint(folder)
    assert ckpt.layout == "hf_trainer"
    assert set(ckpt.model) == set(trained[0].state_dict())
    assert ckpt.step == 5 and ckpt.planned_steps == 400
    assert ckpt.optimizers and ckpt.schedulers and ckpt.scaler["scale"] == 1024.0


def test_ddp_prefix_is_stripped(tmp_path, trained):
    torch.save({f"module.{k}": v for k, v in trained[0].state_dict().items()}, tmp_path / "ddp.pt")
    ckpt = load_checkpoint(tmp_path / "ddp.pt")
    assert set(ckpt.model) == set(trained[0].state_dict())
    assert any("module." in n for n in ckpt.notes)


class _Evil:
    """Unpickling this writes a file: what a malicious checkpoint would do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",))


def test_malicious_pickle_is_refused_and_never_executed(tmp_path):
    marker = tmp_path / "pwned.txt"
    torch.save({"model": {"w": torch.ones(2)}, "payload": _Evil(marker)}, tmp_path / "evil.pt")
    with pytest.raises(ReplayError) as err:
        load_checkpoint(tmp_path / "evil.pt")
    assert "refusing to unpickle" in str(err.value) and "exec" in str(err.value) and "--trust-checkpoint" in str(err.value)
    assert not marker.exists()


def test_malicious_pickle_via_cli_is_one_line_exit_2(tmp_path):
    marker = tmp_path / "pwned.txt"
    torch.save(_Evil(marker), tmp_path / "evil.pt")
    result = CliRunner().invoke(app, ["replay", str(tmp_path / "evil.pt")])
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0 and "refusing to unpickle" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not marker.exists()


def test_hf_training_args_is_never_unpickled(tmp_path, trained):
    folder = hf_folder(tmp_path / "checkpoint-5", trained)
    marker = tmp_path / "pwned.txt"
    torch.save(_Evil(marker), folder / "training_args.bin")
    load_checkpoint(folder)
    assert not marker.exists()


class Unknown:
    """A class no allow-list knows: harmless here, but the loader cannot know that."""


def test_trust_checkpoint_allows_full_unpickling_and_says_so(tmp_path, trained):
    torch.save({"model": trained[0].state_dict(), "extra": Unknown()}, tmp_path / "odd.pt")
    with pytest.raises(ReplayError, match=r"it references test_replay_checkpoint\.Unknown;"):
        load_checkpoint(tmp_path / "odd.pt")
    said = []
    ckpt = load_checkpoint(tmp_path / "odd.pt", trust=True, warn=said.append)
    assert set(ckpt.model) == set(trained[0].state_dict())
    assert len(said) == 1 and said[0].startswith("warning: --trust-checkpoint") and "test_replay_checkpoint.Unknown" in said[0]


def test_harmless_types_load_without_trust(tmp_path, trained):
    """timm pickles its argparse args (with paths and enums inside): read safely, no --trust-checkpoint."""
    args = argparse.Namespace(model="resnet18", epochs=10, output=pathlib.PosixPath("/runs/x"))
    torch.save({"state_dict": trained[0].state_dict(), "arch": "resnet18", "epoch": 9, "args": args}, tmp_path / "timm.pth.tar")
    ckpt = load_checkpoint(tmp_path / "timm.pth.tar")
    assert ckpt.layout == "timm" and ckpt.hparams["epochs"] == 10 and ckpt.epochs_done == 10 and ckpt.planned_epochs == 10


@pytest.mark.parametrize(
    "content,message",
    [(b"not a checkpoint at all", "not a readable PyTorch checkpoint"), (None, "no such file")],
)
def test_bad_input_is_one_clear_error(tmp_path, content, message):
    path = tmp_path / "bad.pt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ReplayError, match=message) as err:
        load_checkpoint(path)
    assert str(path) in str(err.value)


def test_unknown_layout_names_the_keys(tmp_path):
    torch.save({"foo": 1, "bar": [1, 2]}, tmp_path / "odd.pt")
    with pytest.raises(ReplayError, match="top-level keys: bar, foo"):
        load_checkpoint(tmp_path / "odd.pt")


def test_folder_that_is_not_a_checkpoint(tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(ReplayError, match="Hugging Face checkpoint folder"):
        load_checkpoint(tmp_path)


def test_import_logdoctor_replay_does_not_import_torch():
    code = "import sys, logdoctor, logdoctor.replay, logdoctor.replay.command; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.stdout.strip() == "False", out.stderr


def test_whole_module_saved_needs_trust_then_reads(tmp_path):
    torch.save({"model": mlp(), "step": 3}, tmp_path / "whole.pt")
    with pytest.raises(ReplayError, match="refusing to unpickle"):
        load_checkpoint(tmp_path / "whole.pt")
    ckpt = load_checkpoint(tmp_path / "whole.pt", trust=True)
    assert ckpt.layout == "training_dict" and "0.weight" in ckpt.model and ckpt.step == 3


def _cli(*args: str) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess: torch's logger writes to the process's own stderr, which CliRunner misses."""
    return subprocess.run([sys.executable, "-m", "logdoctor", *args], capture_output=True, text=True, cwd=Path(__file__).parent)


def test_raw_pickle_refusal_names_the_global_and_stays_one_line(tmp_path):
    """A plain pickle.dump (not torch.save) with a payload: torch rejects it on an opcode number and warns about
    the protocol; the refusal names the global it wants instead, found by reading opcodes, never executing."""
    import pickle

    marker = tmp_path / "pwned.txt"
    with open(tmp_path / "raw.pt", "wb") as fh:
        pickle.dump({"model": {"w": torch.ones(2)}, "payload": _Evil(marker)}, fh, protocol=4)
    result = _cli("replay", str(tmp_path / "raw.pt"))
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "refusing to unpickle (it references builtins.exec" in result.stderr and not marker.exists()


def test_raw_pickle_without_a_payload_is_not_called_malicious(tmp_path):
    """Near miss: a raw pickle of plain numbers names no global; it is unreadable, not refused."""
    import pickle

    with open(tmp_path / "raw.pt", "wb") as fh:
        pickle.dump({"model": [1.0, 2.0]}, fh, protocol=4)
    result = _cli("replay", str(tmp_path / "raw.pt"))
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "refusing" not in result.stderr and "not a readable PyTorch checkpoint" in result.stderr


@pytest.mark.parametrize("bad", ["pt2", "mse"])
def test_torch_noise_never_precedes_the_error_line(tmp_path, trained, bad):
    """A corrupt torch.export program (torch logs a traceback) or a broadcasting MSE on class ids (a UserWarning)."""
    model, opt, _, _ = trained
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 5}, tmp_path / "c.pt")
    torch.save((torch.randn(8, 16), torch.randint(0, 10, (8,))), tmp_path / "batch.pt")
    (tmp_path / "m.pt2").write_bytes(b"not a zip archive" * 10)
    spec = [str(tmp_path / "m.pt2")] if bad == "pt2" else [f"{Path(__file__).parent / '_replay_models.py'}:mlp", "--loss", "mse"]
    result = _cli("replay", str(tmp_path / "c.pt"), "--model", *spec, "--batch", str(tmp_path / "batch.pt"))
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert result.stderr.startswith("logdoctor: ")
