"""Where the runner may listen: loopback by default; anything else only with a token. Run as
a user runs it (``python -m gpu_runner.service``, the ``cudalens runner`` command)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_runner.service.auth import BindRefused, check_bind, is_loopback

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("::1", True),
    ("[::1]", True), ("0.0.0.0", False), ("::", False), ("192.168.1.5", False),
    ("gpu-box.example", False),
])
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_check_bind():
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "a-long-enough-token-123")
    with pytest.raises(BindRefused) as e:
        check_bind("0.0.0.0", None)
    assert str(e.value).startswith("refusing to listen on 0.0.0.0 without a token: the runner "
                                   "executes the CUDA code it is sent")
    assert "--token TOKEN (or the environment variable CUDALENS_RUNNER_TOKEN)" in str(e.value)
    with pytest.raises(BindRefused, match=r"^the token must have at least 16 characters, "
                                          r"found 5"):
        check_bind("127.0.0.1", "short")


def runner(*args, env_token=None):
    env = dict(os.environ)
    env.pop("CUDALENS_RUNNER_TOKEN", None)
    if env_token:
        env["CUDALENS_RUNNER_TOKEN"] = env_token
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "server"),
                                         env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "gpu_runner.service", *args], env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_runner_refuses_a_public_address_without_a_token():
    proc = runner("--host", "0.0.0.0", "--port", "0")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: refusing to listen on 0.0.0.0 without a token")
    assert "Traceback" not in proc.stderr


def test_runner_refuses_a_short_token_from_the_environment():
    proc = runner("--host", "0.0.0.0", "--port", "0", env_token="abc")
    assert proc.returncode == 2
    assert "the token must have at least 16 characters, found 3" in proc.stderr


def test_cli_registration_adds_the_runner_command():
    import click
    from click.testing import CliRunner

    from cudalens.cli_runner import register

    @click.group()
    def main():
        pass

    register(main)
    assert "runner" in main.commands
    out = CliRunner().invoke(main, ["runner", "--help"])
    assert out.exit_code == 0
    for option in ("--host", "--port", "--token", "--devices", "--max-body-bytes"):
        assert option in out.output
    assert "--port-file" not in out.output  # internal
    # the token rule check_bind enforces is in the help, with how to make a token
    words = " ".join(out.output.split())
    assert ("--token TEXT Require 'Authorization: Bearer TOKEN' on every request; at least 16 "
            "characters (python -c 'import secrets; print(secrets.token_urlsafe(32))' makes "
            "one).") in words, words
    out = CliRunner().invoke(main, ["runner", "--devices", "0,x"])
    assert out.exit_code == 2 and "expected comma-separated device indices" in out.output
