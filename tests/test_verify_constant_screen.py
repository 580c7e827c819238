"""The device screen's part of the constant-output check (issue 11, item 6) without a GPU:
``verify._clean_effects`` with a stand-in screen that does on numpy arrays what each screen
kernel does on device memory (``gpu_runner.screen``'s doc; ``tests/test_screen_gpu.py`` holds
the kernels to that on a GPU). A launch the tolerance screen clears but whose output is
constant where the baseline's varies must not be cleared, so that the host judges it."""

from __future__ import annotations

import numpy as np

from gpu_runner.compare import Bounds, mismatch, output_scale, unwritten
from gpu_runner.problem import Buffer, Tolerance
from gpu_runner.verify import _clean_effects, _Reference

N = 4096
SPEC = Buffer("z", "float32", N, "out")


class ArrayScreen:
    """``DeviceScreen``'s methods over numpy arrays; a "pointer" is a key of ``memory``."""

    def __init__(self, memory: dict[int, np.ndarray]):
        self.memory = memory
        self.calls: list[str] = []

    def differing_bytes(self, a: int, b: int, nbytes: int) -> int:
        self.calls.append("bits")
        return int(np.count_nonzero(self.memory[a].view(np.uint8) != self.memory[b].view(np.uint8)))

    def flagged(self, ref: int, cand: int, dtype: str, length: int, bounds: Bounds) -> int:
        self.calls.append(f"flagged rtol={bounds.rtol:g}")
        r, c = self.memory[ref], self.memory[cand]
        d, u = mismatch(r, c, bounds), unwritten(r, c)
        return (d.count if d else 0) + (u.count if u else 0)

    def abs_max(self, ptr: int, dtype: str, length: int) -> float:
        self.calls.append("abs_max")
        return output_scale(self.memory[ptr])

    def unlike_first(self, ptr: int, dtype: str, length: int) -> int:
        self.calls.append(f"unlike_first {ptr}")
        v = self.memory[ptr].astype(np.float64)
        return int(np.count_nonzero(~((v == v[0]) | (np.isnan(v) & np.isnan(v[0])))))


class Snapshot:
    def __init__(self, ptr: int, memory):
        self._ptr, self.memory, self.specs = ptr, memory, {"z": SPEC}

    def ptr(self, name: str) -> int:
        return self._ptr

    def read(self, name: str) -> np.ndarray:
        return self.memory[self._ptr].copy()


class Launched:
    """A candidate's device buffers after its launch: output z at pointer 2."""

    def guard_damage(self):
        return None

    def input_specs(self):
        return []

    def output_specs(self):
        return [SPEC]

    def data_ptr(self, name: str) -> int:
        return 2


def _clean(candidate: np.ndarray, tolerance: Tolerance, reference_values: np.ndarray):
    memory = {1: reference_values, 2: candidate}
    screen = ArrayScreen(memory)
    snap = Snapshot(1, memory)
    reference = _Reference(outputs={}, snap=snap)
    clean = _clean_effects(screen, Launched(), snap,
                           lambda spec: reference.bounds(spec, tolerance, screen), reference)
    return clean, screen, reference


REF = np.linspace(1e-3, 2e-3, N).astype(np.float32)
LOOSE = Tolerance(0.9, 0.9)


def test_a_constant_output_that_a_loose_tolerance_clears_is_flagged():
    clean, screen, _ = _clean(np.zeros(N, np.float32), LOOSE, REF)
    assert not clean
    # the tolerance screen cleared it; the constant check (the candidate, then the baseline,
    # then the default bounds rtol 1e-4) flagged it
    assert screen.calls == ["abs_max", "flagged rtol=0.9", "unlike_first 2", "unlike_first 1",
                            "abs_max", "flagged rtol=0.0001"]


def test_a_correct_output_and_a_constant_one_within_the_default_tolerance_are_cleared():
    clean, screen, _ = _clean(REF.copy(), LOOSE, REF)
    assert clean and screen.calls == ["abs_max", "flagged rtol=0.9", "unlike_first 2"]
    noisy = np.full(N, 0.5, np.float32)
    noisy[7] = np.nextafter(np.float32(0.5), np.float32(1))
    clean, screen, _ = _clean(np.full(N, 0.5, np.float32), LOOSE, noisy)
    assert clean and screen.calls[-1] == "flagged rtol=0.0001"


def test_a_constant_baseline_is_not_this_checks_business_and_is_asked_once():
    clean, screen, reference = _clean(np.zeros(N, np.float32), LOOSE, np.full(N, 2e-3, np.float32))
    assert clean
    assert screen.calls[-2:] == ["unlike_first 2", "unlike_first 1"]
    assert reference.varies(SPEC, screen) is False and screen.calls[-1] == "unlike_first 1"
