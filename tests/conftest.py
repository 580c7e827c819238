"""Every test sees an empty user configuration folder (XDG_CONFIG_HOME), so that a
~/.config/cudalens/config.toml on the machine running the tests changes no result; processes
the tests start inherit it."""

import pytest


@pytest.fixture(autouse=True)
def _isolated_user_config(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
