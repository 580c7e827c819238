"""``cudalens.engine.preflight``: the build and the local compile checked before any runner is
asked (real nvcc where installed; a missing nvcc refuses nothing)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cudalens.engine.preflight import NotReady, Ready, preflight
from cudalens.target import load_target
from nvcc_util import needs_nvcc

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _saxpy(tmp_path: Path, broken: bool = False) -> Path:
    text = (EXAMPLES / "saxpy.cu").read_text()
    if broken:
        text = text.replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + y[i]")
    (tmp_path / "saxpy.cu").write_text(text)
    shutil.copy(EXAMPLES / "saxpy.cu.spec", tmp_path / "saxpy.cu.spec")
    return tmp_path / "saxpy.cu"


@needs_nvcc
def test_a_file_that_compiles_is_ready_with_its_check(tmp_path):
    ready = preflight(load_target(_saxpy(tmp_path)))
    assert isinstance(ready, Ready)
    assert ready.compiled is not None and ready.compiled.ok
    assert [k.name for k in ready.compiled.kernels] == ["saxpy"]
    assert ready.build.files == {} and ready.note == ""


@needs_nvcc
def test_a_compile_error_is_not_ready_at_its_line(tmp_path):
    path = _saxpy(tmp_path, broken=True)
    with pytest.raises(NotReady) as refused:
        preflight(load_target(path))
    assert refused.value.line == 9
    assert str(refused.value) == (
        f'{path}:9: expected a ";" ({path} does not compile with nvcc for sm_90: 1 error; '
        f'cudalens check {path} shows them all)')


def test_a_refused_build_table_is_not_ready_before_any_compile(tmp_path):
    path = _saxpy(tmp_path, broken=True)
    (tmp_path / "cudalens.toml").write_text('[build]\nstd = "gnu++17"\n')
    with pytest.raises(NotReady) as refused:
        preflight(load_target(path), nvcc=str(tmp_path / "no-nvcc"))
    assert str(refused.value) == (f"{tmp_path / 'cudalens.toml'} [build]: std: expected "
                                  f"'c++NN' (c++17, c++20), found 'gnu++17'")
    assert refused.value.line is None


def test_without_nvcc_nothing_is_refused_and_the_note_says_why(tmp_path):
    path = _saxpy(tmp_path, broken=True)
    ready = preflight(load_target(path), nvcc=str(tmp_path / "no-nvcc"))
    assert ready.compiled is None
    assert ready.note.startswith(f"not compiled here: nvcc not found (looked for "
                                 f"{tmp_path / 'no-nvcc'})")


@needs_nvcc
def test_a_given_check_is_used_instead_of_compiling(tmp_path):
    from cudalens.check import compile_check

    broken = load_target(_saxpy(tmp_path, broken=True))
    good = compile_check(str(broken.path), (EXAMPLES / "saxpy.cu").read_text())
    assert good.ok
    # the broken text passes: the check given (of another text here, to tell) is what counts
    assert preflight(broken, compiled=good, nvcc=str(tmp_path / "no-nvcc")).compiled is good
    assert preflight(broken, compile=False).compiled is None


def test_an_nvcc_that_fails_without_naming_a_line_refuses_nothing(tmp_path):
    import stat

    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\necho 'nvcc fatal   : Failed to preprocess host compiler "
                    "properties.'\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    ready = preflight(load_target(_saxpy(tmp_path, broken=True)), nvcc=str(fake))
    assert ready.compiled is None
    assert ready.note == ("not compiled here: nvcc failed without naming a line of the file "
                          "(Failed to preprocess host compiler properties.)")
