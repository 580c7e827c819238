"""Reading spec files: the accepted syntax and every SpecError the parser raises."""

from __future__ import annotations

import pytest

from cudalens.spec.errors import SpecError
from cudalens.spec.model import BufferDecl, CheckDecl, LaunchDecl, ScalarDecl, SizeDecl
from cudalens.spec.parser import load_spec_for, parse_spec, spec_path_for

FULL = """\
# a comment before any section is ignored
kernel saxpy                      # starts a section
# note one
#   note two, indented
size n = 1 << 24                  # a problem size
check n = 1000003
size m = n / 2
scalar n: int = n
scalar a: float = 2.5
in x: float[n]
inout y: float[n]
in idx: int32[m] range(0, n)
block = 256
grid = ceil_div(n, block.x)       # may use block.x
shared = 4 * block.x
flops = 2 * n
tolerance = 1e-4
atomics

kernel ops::other
size k = 64
out z: double[k]
block = (32, 8)
grid = min(sm_count, k), 2
"""


def test_parse_full_section():
    specs = parse_spec(FULL, "saxpy.cu.spec")
    assert list(specs) == ["saxpy", "ops::other"]
    s = specs["saxpy"]
    assert s.kernel == "saxpy" and s.line == 2 and s.source == "saxpy.cu.spec"
    assert s.notes == ("note one", "note two, indented")
    assert s.sizes == (SizeDecl("n", "1 << 24", 5), SizeDecl("m", "n / 2", 7))
    assert s.checks == (CheckDecl("n", "1000003", 6),)
    assert s.params == (
        ScalarDecl("n", "int", "n", 8),
        ScalarDecl("a", "float", "2.5", 9),
        BufferDecl("in", "x", "float", "n", None, None, 10),
        BufferDecl("inout", "y", "float", "n", None, None, 11),
        BufferDecl("in", "idx", "int32", "m", "0", "n", 12),
    )
    assert s.launch == LaunchDecl(("256",), ("ceil_div(n, block.x)",), "4 * block.x", 13)
    assert s.flops == "2 * n" and s.tolerance == 1e-4 and s.atomics is True
    o = specs["ops::other"]
    assert o.notes == () and o.line == 20
    # parentheses around a block tuple are accepted; sm_count in grid is not evaluated here
    assert o.launch == LaunchDecl(("32", "8"), ("min(sm_count, k)", "2"), "0", 23)
    assert o.flops is None and o.tolerance is None and o.atomics is False


def test_checks_are_kept_in_size_order():
    text = ("kernel k\nsize a = 10\nsize b = 20\ncheck b = 7\ncheck a = 3\n"
            "block = 1\ngrid = 1\n")
    assert parse_spec(text)["k"].checks == (CheckDecl("a", "3", 5), CheckDecl("b", "7", 4))


def test_notes_stop_at_the_first_declaration():
    text = "kernel k\n# kept\n\n# kept too\nblock = 1\n# not a note\ngrid = 1\n"
    assert parse_spec(text)["k"].notes == ("kept", "kept too")


def test_spec_error_str_and_attributes():
    with pytest.raises(SpecError) as info:
        parse_spec("kernel saxpy\nsize n = 4\nin x float[n]\n", "saxpy.cu.spec")
    err = info.value
    assert (err.path, err.line) == ("saxpy.cu.spec", 3)
    assert err.message == "expected 'ROLE NAME: TYPE[LENGTH]', found 'in x float[n]'"
    assert str(err) == "saxpy.cu.spec:3: expected 'ROLE NAME: TYPE[LENGTH]', found 'in x float[n]'"


H = "kernel k\nsize n = 1024\n"
T = "block = 256\ngrid = ceil_div(n, block.x)\n"


@pytest.mark.parametrize("text, line, message", [
    pytest.param(H + "foo x = 1\n" + T,
                 3, "expected a declaration (kernel, size, check, multiple, scalar, in, out, inout, block, grid, shared, flops, reads, writes, tolerance, atomics), found 'foo x = 1'",
                 id='unknown'),
    pytest.param("size n = 4\n",
                 1, "expected 'kernel NAME' before the first declaration, found 'size n = 4'",
                 id='before_kernel'),
    pytest.param("kernel\n",
                 1, "expected 'kernel NAME', found 'kernel'",
                 id='kernel_noname'),
    pytest.param("kernel 9lives\n",
                 1, "expected a kernel name (a C++ identifier, optionally qualified like ops::saxpy), found '9lives'",
                 id='kernel_badname'),
    pytest.param(H + T + "kernel k\n" + "size n = 1\n" + T,
                 5, 'kernel k already has a section, starting on line 1',
                 id='dup_kernel'),
    pytest.param("kernel k\nsize n 5\n",
                 2, "expected 'size NAME = EXPR', found 'size n 5'",
                 id='size_malformed'),
    pytest.param("kernel k\nsize 2n = 4\n",
                 2, "expected a C identifier as the size name, found '2n'",
                 id='size_badname'),
    pytest.param("kernel k\nsize block = 4\n",
                 2, "'block' cannot name a size: it is reserved in expressions (reserved: block, sm_count and Python keywords)",
                 id='size_reserved'),
    pytest.param("kernel k\nsize lambda = 4\n",
                 2, "'lambda' cannot name a size: it is reserved in expressions (reserved: block, sm_count and Python keywords)",
                 id='size_keyword'),
    pytest.param(H + "size n = 2\n",
                 3, 'size n is already declared on line 2',
                 id='size_dup'),
    pytest.param(H + "size m = q * 2\n",
                 3, "in size m: undefined name 'q' in 'q * 2': expected one of the sizes declared above (n)",
                 id='size_undef'),
    pytest.param(H + "size m = 1 <<\n",
                 3, "in size m: invalid expression '1 <<': invalid syntax",
                 id='size_syntax'),
    pytest.param(H + "size m = block.x\n",
                 3, "in size m: block.x/.y/.z cannot be used here (only in grid, shared and buffer lengths), found 'block.x'",
                 id='size_block'),
    pytest.param(H + "size m = n // 2\n",
                 3, "in size m: '//' is not allowed: '/' between integers is already C integer division (truncation toward zero) in 'n // 2'",
                 id='size_floordiv'),
    pytest.param(H + "check m = 3\n",
                 3, "expected 'check' of a size declared above, found check m (sizes so far: n)",
                 id='check_undeclared'),
    pytest.param(H + "check n = 3\ncheck n = 5\n",
                 4, 'check n is already declared on line 3',
                 id='check_dup'),
    pytest.param(H + "size m = 4\ncheck n = m\n",
                 4, "in check n: undefined name 'm' in 'm': expected one of the sizes declared before size n, on line 2 (none)",
                 id='check_later'),
    pytest.param(H + "check n\n",
                 3, "expected 'check NAME = EXPR', found 'check n'",
                 id='check_malformed'),
    pytest.param(H + "scalar n int = n\n",
                 3, "expected 'scalar NAME: TYPE = EXPR', found 'scalar n int = n'",
                 id='scalar_malformed'),
    pytest.param(H + "scalar n: integer = n\n",
                 3, "expected an element type for n (one of float, double, half, int, unsigned, size_t, long, char, bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, float32, float64, bfloat16, bf16, float8_e4m3, float8_e5m2), found 'integer'",
                 id='scalar_type'),
    pytest.param(H + "in x: float[n]\nout x: float[n]\n",
                 4, 'parameter x is already declared on line 3',
                 id='param_dup'),
    pytest.param(H + "scalar a: float = alpha\n",
                 3, "in scalar a: undefined name 'alpha' in 'alpha': expected one of the sizes declared above (n)",
                 id='scalar_undef'),
    pytest.param(H + "in x float[n]\n",
                 3, "expected 'ROLE NAME: TYPE[LENGTH]', found 'in x float[n]'",
                 id='buffer_malformed'),
    pytest.param(H + "in x float[n] range(0, 1)\n",
                 3, "expected 'ROLE NAME: TYPE[LENGTH] range(LOW, HIGH)', found 'in x float[n] range(0, 1)'",
                 id='buffer_range_malformed'),
    pytest.param(H + "in x: float[n] range(0)\n",
                 3, "expected 'range(LOW, HIGH)', found 'range(0)'",
                 id='range_arity'),
    pytest.param(H + "out x: float[n] range(0, 1)\n",
                 3, "range(...) sets how inputs are drawn, but x is 'out' (outputs are poisoned before each launch): expected role 'in' or 'inout', or no range",
                 id='range_out'),
    pytest.param(H + "in x: float[sm_count]\n",
                 3, "in length of x: sm_count can be used in grid only, found 'sm_count'",
                 id='length_sm'),
    pytest.param(H + "in x: int[n] range(0, block.x)\n",
                 3, "in range high of x: block.x/.y/.z cannot be used here (only in grid, shared and buffer lengths), found 'block.x'",
                 id='range_block'),
    pytest.param(H + "in x: float[]\n",
                 3, 'in length of x: expected an expression, found nothing',
                 id='length_empty'),
    pytest.param(H + "block = 1, 2, 3, 4\n",
                 3, "expected 'block = EXPR[, EXPR[, EXPR]]' (1 to 3 expressions, x first), found 'block = 1, 2, 3, 4'",
                 id='block_4'),
    pytest.param(H + "block = block.x\n",
                 3, "in block.x: block.x/.y/.z cannot be used here (only in grid, shared and buffer lengths), found 'block.x'",
                 id='block_uses_block'),
    pytest.param(H + "block = 256\ngrid = 1, 1, 1, 1\n",
                 4, "expected 'grid = EXPR[, EXPR[, EXPR]]' (1 to 3 expressions, x first), found 'grid = 1, 1, 1, 1'",
                 id='grid_4'),
    pytest.param(H + "block = 256\nshared = sm_count\n",
                 4, "in shared: sm_count can be used in grid only, found 'sm_count'",
                 id='shared_sm'),
    pytest.param(H + "flops = block.x\n",
                 3, "in flops: block.x/.y/.z cannot be used here (only in grid, shared and buffer lengths), found 'block.x'",
                 id='flops_block'),
    pytest.param(H + "tolerance = n\n",
                 3, "expected 'tolerance = NUMBER' (a relative tolerance such as 1e-4), found 'n': undefined name 'n' in 'n'",
                 id='tol_name'),
    pytest.param(H + "tolerance = -1e-3\n",
                 3, 'expected a positive relative tolerance, found -0.001',
                 id='tol_neg'),
    pytest.param(H + "block = 256\ntolerance = 0.9\n",
                 4, "expected a relative tolerance below 0.25, found 0.9: an element passes within tolerance x (|expected| + max |expected|), so from 0.5 on an all-zero output passes everywhere and from 0.25 on it passes wherever |expected| is under a third of the largest; the defaults are 1e-4 (float), 1e-2 (half), 1e-10 (double)",
                 id='tol_too_loose'),
    pytest.param(H + "tolerance = 0.25\n",
                 3, "expected a relative tolerance below 0.25, found 0.25: an element passes within tolerance x (|expected| + max |expected|), so from 0.5 on an all-zero output passes everywhere and from 0.25 on it passes wherever |expected| is under a third of the largest; the defaults are 1e-4 (float), 1e-2 (half), 1e-10 (double)",
                 id='tol_at_the_limit'),
    pytest.param(H + "scalar a: float = 1e39\n" + T,
                 3, "expected scalar a (float) to be a finite float32 value, within +-3.40282e+38, found '1e39' = 1e+39, which is inf on the device in the nominal run (n=1024)",
                 id='scalar_float_overflow'),
    pytest.param(H + "scalar h: half = -70000\n" + T,
                 3, "expected scalar h (half) to be a finite float16 value, within +-65504, found '-70000' = -70000, which is -inf on the device in the nominal run (n=1024)",
                 id='scalar_half_overflow'),
    pytest.param(H + "size m = 65536\nscalar h: float16 = m + 100\n" + T,
                 4, "expected scalar h (float16) to be a finite float16 value, within +-65504, found 'm + 100' = 65636, which is inf on the device in the nominal run (n=1024, m=65536)",
                 id='scalar_half_overflow_from_a_size'),
    pytest.param(H + "scalar d: double = 2**1024\n" + T,
                 3, "in scalar d: '**' (power) is not allowed in '2**1024'",
                 id='scalar_double_power'),
    pytest.param(H + "scalar d: double = 179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368 * 2\n" + T,
                 3, "expected scalar d (double) to be a finite float64 value, within +-1.79769e+308, found '179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368 * 2' = 359538626972463141629054847463408713596141135051689993197834953606314521560057077521179117265533756343080917907028764928468642653778928365536935093407075033972099821153102564152490980180778657888151737016910267884609166473806445896331617118664246696549595652408289446337476354361838599762500808052368249716736, which is inf on the device in the nominal run (n=1024)",
                 id='scalar_double_overflow_from_an_integer'),
    pytest.param(H + "block = 256\nblock = 128\n",
                 4, 'block is already declared on line 3',
                 id='dup_block'),
    pytest.param(H + "atomics yes\n",
                 3, "expected 'atomics', found 'atomics yes'",
                 id='atomics_trail'),
    pytest.param(H + "grid = 1\n",
                 1, "kernel k: expected 'block = EXPR[, EXPR[, EXPR]]' in the section, found no block declaration",
                 id='missing_block'),
    pytest.param(H + "block = 1\n",
                 1, "kernel k: expected 'grid = EXPR[, EXPR[, EXPR]]' in the section, found no grid declaration",
                 id='missing_grid'),
    pytest.param(H + "block 256\n",
                 3, "expected 'block = EXPR[, EXPR[, EXPR]]', found 'block 256'",
                 id='assign_malformed'),
    pytest.param("kernel k\nsize n = 1 - 1\n" + T,
                 2, "expected size n to be an integer >= 1, found '1 - 1' = 0 in the nominal run",
                 id='size_zero'),
    pytest.param("kernel k\nsize n = 1e6\n" + T,
                 2, "expected size n to be an integer >= 1, found '1e6' = 1000000.0 in the nominal run (write integers without an exponent: 1_000_000, not 1e6)",
                 id='size_float'),
    pytest.param(H + "check n = 0\n" + T,
                 3, "expected check n to be an integer >= 1, found '0' = 0 in the ragged run",
                 id='check_zero'),
    pytest.param(H + "in x: float[n - 1024]\n" + T,
                 3, "expected length of x to be an integer >= 1, found 'n - 1024' = 0 in the nominal run (n=1024)",
                 id='length_zero'),
    pytest.param(H + "block = 64, 32\ngrid = 1\n",
                 3, 'expected at most 1024 threads per block, found block (64, 32, 1) = 2048 threads in the nominal run (n=1024)',
                 id='block_big'),
    pytest.param(H + "block = 1, 1, 65\ngrid = 1\n",
                 3, 'expected block.z <= 64 (the CUDA limit), found 65 in the nominal run (n=1024)',
                 id='block_z'),
    pytest.param(H + "block = 256\ngrid = n / 2048\n",
                 4, "expected grid.x to be an integer >= 1, found 'n / 2048' = 0 in the nominal run (n=1024)",
                 id='grid_zero'),
    pytest.param(H + "block = 256\ngrid = 1, n * 100\n",
                 4, 'expected grid.y <= 65535 (the CUDA limit), found 102400 in the nominal run (n=1024)',
                 id='grid_y'),
    pytest.param(H + T + "shared = -4\n",
                 5, "expected shared to be an integer >= 0, found '-4' = -4 in the nominal run (n=1024)",
                 id='shared_neg'),
    pytest.param(H + "in x: float[n] range(1, 1)\n" + T,
                 3, 'expected low < high in the range of x, found range(1, 1) in the nominal run (n=1024)',
                 id='range_order'),
    pytest.param(H + "in x: int[n] range(0, 2.5)\n" + T,
                 3, 'expected integer bounds for x (int32), found range(0, 2.5) in the nominal run (n=1024)',
                 id='range_int_float'),
    pytest.param(H + "in x: uint8[n] range(0, 300)\n" + T,
                 3, "expected the range of x within uint8's [0, 256), found range(0, 300) in the nominal run (n=1024)",
                 id='range_uint8'),
    pytest.param(H + "in x: half[n] range(-1e5, 1)\n" + T,
                 3, "expected the range of x within half's finite values +-65504 (float16), found range(-100000.0, 1) in the nominal run (n=1024)",
                 id='range_half'),
    pytest.param(H + "in x: float[n] range(-1e40, 1)\n" + T,
                 3, "expected the range of x within float's finite values +-3.40282e+38 (float32), found range(-1e+40, 1) in the nominal run (n=1024)",
                 id='range_float_overflow'),
    pytest.param(H + "in x: float[n] range(0, 3.5e38)\n" + T,
                 3, "expected the range of x within float's finite values +-3.40282e+38 (float32), found range(0, 3.5e+38) in the nominal run (n=1024)",
                 id='range_float_high_overflow'),
    pytest.param(H + "in x: float[n] range(1, 1)\n" + T,
                 3, "expected low < high in the range of x, found range(1, 1) in the nominal run (n=1024)",
                 id='range_empty'),
    pytest.param(H + "in x: float[n] range(2, -1)\n" + T,
                 3, "expected low < high in the range of x, found range(2, -1) in the nominal run (n=1024)",
                 id='range_reversed'),
    pytest.param(H + "check n = 2048\n" + T,
                 3, "expected check n <= size n = 1024 (the ragged verification size may not exceed the timed size), found '2048' = 2048 in the ragged run",
                 id='check_above_size'),
    pytest.param(H + "check n = 0\n" + T,
                 3, "expected check n to be an integer >= 1, found '0' = 0 in the ragged run",
                 id='check_zero'),
    pytest.param(H + "check n = -5\n" + T,
                 3, "expected check n to be an integer >= 1, found '-5' = -5 in the ragged run",
                 id='check_negative'),
    pytest.param(H + "in x: float[n]\nblock = 256\ngrid = 1\nshared = 232449\n",
                 6, "expected shared <= 232448 bytes (227 KiB, the most dynamic shared memory a block can opt into on compute capability 9.0, H100/H200: CUDA C++ Programming Guide, table 'Technical Specifications per Compute Capability'), found '232449' = 232449 in the nominal run (n=1024)",
                 id='shared_above_limit'),
    pytest.param(H + "in x: float[n]\nblock = 256\ngrid = 1\nshared = -4\n",
                 6, "expected shared to be an integer >= 0, found '-4' = -4 in the nominal run (n=1024)",
                 id='shared_negative'),
    pytest.param("kernel k\nsize n = 1 << 62\nin x: float[n]\nblock = 256\ngrid = 1\n",
                 3, "expected the bytes of x to fit in int64 (at most 9223372036854775807), found 4611686018427387904 elements x 4 bytes = 1.718e+10 GiB in the nominal run (n=4611686018427387904)",
                 id='buffer_bytes_overflow'),
    pytest.param("kernel k\nsize n = 1 << 38\nin x: float[n]\nout y: double[n]\nblock = 256\ngrid = 1\n",
                 1, "expected the buffers to total at most 1024 GiB (1 TiB), found 3072 GiB (y 2048 GiB, x 1024 GiB) in the nominal run (n=274877906944); the runner also refuses a case that does not fit its GPU's memory",
                 id='total_bytes_above_1tib'),
    pytest.param(H + "scalar s: int = n / 2.0\n" + T,
                 3, "expected scalar s (int) to be an integer in [-2147483648, 2147483647], found 'n / 2.0' = 512.0 in the nominal run (n=1024)",
                 id='scalar_int_float'),
    pytest.param(H + "scalar s: char = 200\n" + T,
                 3, "expected scalar s (char) to be an integer in [-128, 127], found '200' = 200 in the nominal run (n=1024)",
                 id='scalar_char'),
    pytest.param(H + "scalar s: bool = 2\n" + T,
                 3, "expected scalar s (bool) to be an integer in [0, 1], found '2' = 2 in the nominal run (n=1024)",
                 id='scalar_bool'),
    pytest.param(H + T + "flops = -n\n",
                 5, "expected flops >= 0, found '-n' = -1024 in the nominal run (n=1024)",
                 id='flops_neg'),
    pytest.param(H + "size m = n / (n - n)\n" + T,
                 3, "size m: division by zero in 'n / (n - n)' in the nominal run (n=1024)",
                 id='div_zero'),
    pytest.param(H + "size m = n - 1000\n" + T,
                 3, "expected size m to be an integer >= 1, found 'n - 1000' = -385 in the ragged run (n=615)",
                 id='ragged_zero'),
])
def test_spec_errors(text, line, message):
    with pytest.raises(SpecError) as info:
        parse_spec(text, "k.cu.spec")
    assert (info.value.path, info.value.line, info.value.message) == ("k.cu.spec", line, message)


def test_grid_with_sm_count_is_checked_at_resolve_time_not_parse_time():
    spec = parse_spec(H + "block = 256\ngrid = sm_count - 200\n")["k"]
    assert spec.launch.grid == ("sm_count - 200",)


SAXPY_CU = """\
__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
SAXPY_SPEC = """\
kernel saxpy
size n = 1 << 20
scalar n: int = n
scalar a: float = 2.5
in x: float[n]
inout y: float[n]
block = 256
grid = ceil_div(n, block.x)
"""


def test_load_spec_for(tmp_path):
    from cudalens.source.parser import parse_source

    cu = tmp_path / "saxpy.cu"
    cu.write_text(SAXPY_CU)
    assert spec_path_for(cu) == tmp_path / "saxpy.cu.spec"
    assert load_spec_for(cu, "saxpy") is None  # no sidecar file yet
    (tmp_path / "saxpy.cu.spec").write_text(SAXPY_SPEC)
    kernel = parse_source(SAXPY_CU, str(cu)).kernels[0]
    spec = load_spec_for(cu, kernel)
    assert spec is not None and spec.kernel == "saxpy" and spec.source == str(cu) + ".spec"
    assert load_spec_for(str(cu), "saxpy") == spec
    assert load_spec_for(cu, "other") is None


def test_load_spec_for_validates_against_the_kernel(tmp_path):
    from cudalens.source.parser import parse_source

    cu = tmp_path / "saxpy.cu"
    cu.write_text(SAXPY_CU)
    (tmp_path / "saxpy.cu.spec").write_text(SAXPY_SPEC.replace("in x:", "out x:"))
    kernel = parse_source(SAXPY_CU, str(cu)).kernels[0]
    with pytest.raises(SpecError) as info:
        load_spec_for(cu, kernel)
    assert info.value.line == 5
    assert "parameter x of kernel saxpy points to const" in info.value.message


def test_load_spec_for_unreadable_file(tmp_path):
    cu = tmp_path / "k.cu"
    (tmp_path / "k.cu.spec").write_bytes(b"kernel k\n\xff\xfe\n")
    with pytest.raises(SpecError) as info:
        load_spec_for(cu, "k")
    assert info.value.line == 2
    assert info.value.message == ("cannot read the spec file: expected UTF-8 text, found byte "
                                  "0xff at column 1 (outside a comment); save the file as UTF-8")
    (tmp_path / "k.cu.spec").unlink()
    (tmp_path / "k.cu.spec").mkdir()
    with pytest.raises(SpecError) as info:
        load_spec_for(cu, "k")
    assert (info.value.line, info.value.message) == (
        0, "cannot read the spec file: expected a text file, found a directory or special file")


def test_spec_error_survives_pickling():
    import pickle

    err = pickle.loads(pickle.dumps(SpecError("a.spec", 3, "expected x, found y")))
    assert (err.path, err.line, err.message, str(err)) == \
        ("a.spec", 3, "expected x, found y", "a.spec:3: expected x, found y")


def test_values_at_the_edge_of_their_type_and_a_tolerance_below_the_limit_are_accepted():
    # 65510 rounds to half's largest finite value, 65504; 3.4e38 is a finite float
    spec = parse_spec(H + "scalar h: half = 65510\nscalar a: float = 3.4e38\n"
                          "scalar d: double = 1e308\ntolerance = 0.2\n" + T)["k"]
    assert [(p.name, p.expr) for p in spec.params] == [("h", "65510"), ("a", "3.4e38"),
                                                       ("d", "1e308")]
    assert spec.tolerance == 0.2
