"""Configuration mistakes stop with one line naming the file and the key, exit 2, never a traceback;
a typo must never fall back silently to the defaults."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from logdoctor.cli import app
from _tb_writers import write_scalars

ENV = {"COLUMNS": "220", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("run")
    write_scalars(folder, tags=("losses/train", "losses/val"), steps=range(30))
    return folder


def _analyze(run_dir, tmp_path, text: str, *extra: str):
    config = tmp_path / "logdoctor.toml"
    config.write_text(text)
    return CliRunner().invoke(app, ["analyze", str(run_dir), "--config", str(config), *extra], env=ENV), str(config)


@pytest.mark.parametrize(
    "text, expected",
    [
        ('[roles]\ntrain_loss = ["/losses[/"]\n', "'roles.train_loss': invalid regex /losses[/ (unterminated character set"),
        ('[roles]\ntrian_loss = ["losses/train"]\n', "unknown role 'roles.trian_loss'; did you mean 'train_loss'? (valid roles: train_loss, val_loss, lr,"),
        ("[roles]\ntrain_loss = [1]\n", "'roles.train_loss' must be a list of metric names or /regexes/"),
        ('select = ["flatt"]\n', "'select' names unknown rule code 'flatt'"),
        ('ignore = ["spikes"]\n', "'ignore' names unknown rule code 'spikes'"),
        ("[rules.crawlz]\nmin_points = 3\n", "[rules.crawlz]: no rule or replay probe has this code"),
        ("[rules.crawl]\nmax_relative_gain = 0.05\n", "unknown threshold 'rules.crawl.max_relative_gain'; did you mean 'max_relative_drop'? (valid: min_points,"),
        ('[rules.crawl]\nmax_relative_drop = "abc"\n', "'rules.crawl.max_relative_drop' must be a number, not 'abc'"),
        ("bogus = 1\n", "unknown key 'bogus' (valid keys: select, ignore, roles, rules)"),
        ('[rules.overfit_batch_failed]\nlrs = ["a"]\n', "'rules.overfit_batch_failed.lrs' must be a list of numbers, not ['a']"),
        ("[rules.crawl]\nmax_relative_drop = nan\n", "'rules.crawl.max_relative_drop' must be a number, not nan"),
        ("a = " + "[" * 5000 + "]" * 5000 + "\n", "not read (nested deeper than Python's TOML parser goes)"),
    ],
)
def test_a_config_mistake_is_one_line_naming_file_and_key(run_dir, tmp_path, text, expected):
    result, path = _analyze(run_dir, tmp_path, text)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.output.count("\n") == 1
    assert result.output.startswith(f"logdoctor: {path}: ") and expected in result.output


def test_a_valid_config_with_rule_and_probe_thresholds_is_accepted(run_dir, tmp_path):
    text = (
        'select = ["ALL"]\nignore = ["spike"]\n[roles]\ntrain_loss = "losses/train"\n'
        "[rules.crawl]\nmax_relative_drop = 0.1\nmin_points = 10\n[rules.update_ratio_low]\nlimit = 1e-5\n"
    )
    result, _ = _analyze(run_dir, tmp_path, text)
    assert result.exit_code == 0, result.output


def test_an_unknown_code_on_the_command_line_names_no_file(run_dir, tmp_path):
    result, _ = _analyze(run_dir, tmp_path, "", "--select", "flatt")
    assert result.exit_code == 2 and result.output == "logdoctor: unknown rule code 'flatt'; did you mean 'flat'? (see `logdoctor rules`)\n"
