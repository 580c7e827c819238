"""From a reply to runnable code: fenced blocks and tool calls, launch blocks, ``@tune``
markers, splicing into the file with lines mapped back, and compile errors at the model's lines."""

from __future__ import annotations

import json

import pytest

from cudalens.agent.chat import Reply, ToolCall
from cudalens.agent.ledger import Usage
from cudalens.agent.precheck import map_compiler_log, precheck
from cudalens.agent.replies import (CompileRequest, LaunchError, Proposal, Unusable, from_reply,
                                    from_text, from_tool_call, parse_launch)
from cudalens.agent.splice import splice
from cudalens.agent.tuning import (Setting, TuneError, apply_setting, find_params,
                                   integer_defines, settings, substitute_launch)
from cudalens.source.parser import parse_source
from cudalens.spec.model import LaunchDecl
from agent_fakes import SAXPY
from nvcc_util import needs_nvcc

SPEC_LAUNCH = LaunchDecl(block=("256",), grid=("ceil_div(n, block.x)",), shared="0", line=8)
TOOLS = ("compile", "evaluate")
KERNEL_A = "__global__ void saxpy(int n, float a, const float* x, float* y) { }\n"


# -- fenced replies ------------------------------------------------------------------------------


def test_fenced_candidates_with_launch_blocks_and_explanations():
    text = f"""Here are two ideas.

**Candidate 1:** Use a grid-stride loop so fewer blocks do the work.
```cuda
{KERNEL_A}```
```launch
block = 512
grid = 4 * sm_count
```

Second: vectorize the loads
with float4.
```cpp
{KERNEL_A.replace('{ }', '{ /* v4 */ }')}```
"""
    items = from_text(text, "saxpy")
    assert [type(i) for i in items] == [Proposal, Proposal]
    first, second = items
    assert first.code == KERNEL_A and first.origin == "code block 1"
    assert first.launch == "block = 512\ngrid = 4 * sm_count\n"
    assert first.explanation == "Use a grid-stride loop so fewer blocks do the work."
    assert second.launch == "" and "/* v4 */" in second.code
    assert second.explanation == "Second: vectorize the loads with float4."


def test_untagged_blocks_count_only_when_they_hold_a_kernel():
    text = f"```\nnvcc -O3 x.cu\n```\n```\n{KERNEL_A}```\n"
    items = from_text(text, "saxpy")
    assert len(items) == 1 and items[0].code == KERNEL_A and items[0].origin == "code block 1"


def test_a_truncated_reply_is_unusable_and_says_it_was_cut_off():
    items = from_text(f"Tiling:\n```cuda\n{KERNEL_A}    int i =", "saxpy", finish_reason="length")
    assert len(items) == 1 and isinstance(items[0], Unusable)
    assert items[0].reason.startswith("the code block opened at line 2 of the reply is never "
                                      "closed (the reply was cut off: the server stopped at its "
                                      "token limit, finish_reason 'length'")


def test_a_reply_without_code_is_unusable():
    [item] = from_text("I think the kernel is already optimal.", "saxpy")
    assert item.reason == ("no usable code: expected the new kernel `saxpy` in a ```cuda fenced "
                           "block")


def test_blocks_beyond_the_limit_are_not_measured():
    text = "".join(f"```cuda\n{KERNEL_A}```\n" for _ in range(3))
    items = from_text(text, "saxpy", limit=2)
    assert [type(i) for i in items] == [Proposal, Proposal, Unusable]
    assert items[2].reason == "not measured: at most 2 candidates per round"


# -- tool calls ----------------------------------------------------------------------------------


def call(name, arguments, call_id="call_1") -> ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(call_id, name, text)


def test_an_evaluate_call_becomes_a_proposal():
    item = from_tool_call(call("evaluate", {"source": f"```cuda\n{KERNEL_A}```",
                                            "block": [32, 8], "grid": "ceil_div(n, 256)",
                                            "explanation": "  tiles\n the loads "}), None, TOOLS)
    assert item == Proposal(KERNEL_A, "block = 32, 8\ngrid = ceil_div(n, 256)", "tiles the loads",
                            "tool call evaluate call_1", "call_1")


def test_a_compile_call_becomes_a_compile_request():
    assert from_tool_call(call("compile", {"source": KERNEL_A}), None, TOOLS) == \
        CompileRequest(KERNEL_A, "call_1")


@pytest.mark.parametrize("name, arguments, finish, expected", [
    ("evaluate", '{"source": "__global__ void', "length",
     "the arguments are not valid JSON (Unterminated string starting at: line 1 column 12); "
     "send one JSON object such as {\"source\": \"...\", \"explanation\": \"...\"} (the reply was "
     "cut off"),
    ("evaluate", '{"source": 1}', None, "no usable code: the argument 'source' must hold"),
    ("evaluate", '["x"]', None, "the arguments must be a JSON object, found list"),
    ("run_on_gpu", '{"source": "x"}', None, "unknown tool 'run_on_gpu'; the tools are compile, "
                                            "evaluate"),
    ("evaluate", '{"source": "x", "block": {"x": 1}}', None, "argument 'block' must be a string"),
])
def test_malformed_tool_calls_are_unusable_with_the_reason(name, arguments, finish, expected):
    item = from_tool_call(call(name, arguments), finish, TOOLS)
    assert isinstance(item, Unusable) and item.call_id == "call_1"
    assert item.reason.startswith(expected), item.reason


def test_evaluate_calls_beyond_the_limit_are_answered_as_not_measured():
    calls = tuple(call("evaluate", {"source": KERNEL_A, "explanation": "e"}, f"c{i}")
                  for i in range(3))
    reply = Reply("", calls, "tool_calls", Usage(), False, 0.0)
    items = from_reply(reply, "saxpy", TOOLS, limit=2)
    assert [type(i) for i in items] == [Proposal, Proposal, Unusable]
    assert items[2].call_id == "c2" and items[2].reason.startswith("not measured: at most 2")


# -- launch blocks -------------------------------------------------------------------------------


def test_launch_lines_replace_only_what_they_name():
    launch = parse_launch("block = 32, 8  // tile\n\ngrid = ceil_div(n, 32), min(n, 4);",
                          SPEC_LAUNCH)
    assert launch == LaunchDecl(block=("32", "8"), grid=("ceil_div(n, 32)", "min(n, 4)"),
                                shared="0", line=8)
    assert parse_launch("", SPEC_LAUNCH) == SPEC_LAUNCH


@pytest.mark.parametrize("text, expected", [
    ("threads = 256", "launch line 1: expected 'block = ...', 'grid = ...' or 'shared = ...', "
                      "found 'threads = 256'"),
    ("block = 256\nblock = 128", "launch line 2: block is given twice"),
    ("block = 1, 2, 3, 4", "launch line 1: expected one to three expressions"),
    ("grid = n ** 2", "launch line 1: grid: '**' (power) is not allowed"),
])
def test_bad_launch_lines_are_named(text, expected):
    with pytest.raises(LaunchError) as err:
        parse_launch(text, SPEC_LAUNCH)
    assert str(err.value).startswith(expected)


# -- @tune ---------------------------------------------------------------------------------------

TUNED = """#define TILE 32 // @tune 16, 32, 64
#define ROWS (8)  /* @tune: 4, 8 */
#define PLAIN 3
__global__ void k() {}
"""


def test_tune_markers_are_found_and_expanded():
    params = find_params(TUNED)
    assert [(p.name, p.values, p.line) for p in params] == [("TILE", (16, 32, 64), 1),
                                                            ("ROWS", (4, 8), 2)]
    found = settings(params, limit=6)
    assert [s.label for s in found] == ["TILE=16 ROWS=4", "TILE=16 ROWS=8", "TILE=32 ROWS=4",
                                        "TILE=32 ROWS=8", "TILE=64 ROWS=4", "TILE=64 ROWS=8"]
    code = apply_setting(TUNED, found[1])
    assert code.splitlines()[:3] == ["#define TILE 16  // tuned by cudalens over 16, 32, 64",
                                     "#define ROWS 8  // tuned by cudalens over 4, 8",
                                     "#define PLAIN 3"]
    assert integer_defines(code) == {"TILE": 16, "ROWS": 8, "PLAIN": 3}
    assert settings((), limit=1) == [Setting(())]


def test_macros_flow_into_the_launch_but_sizes_are_left_alone():
    launch = LaunchDecl(block=("TILE", "ROWS"), grid=("ceil_div(n, TILE)", "n"), shared="TILE * 4")
    out = substitute_launch(launch, {"TILE": 32, "ROWS": 8, "n": 5}, frozenset({"n"}))
    assert out.block == ("32", "8") and out.grid == ("ceil_div(n, 32)", "n")
    assert out.shared == "32 * 4"
    assert substitute_launch(launch, {"ROWS": -1}).block == ("TILE", "(-1)")


@pytest.mark.parametrize("code, expected", [
    ("int tile = 32; // @tune 16, 32", "line 1: a @tune marker must follow an integer #define"),
    ("#define T 32 // @tune 16, big", "line 1: @tune values must be integers separated by commas, "
                                      "found '16, big'"),
    ("#define T 32 // @tune", "line 1: @tune values must be integers"),
    ("#define T 32 // @tune 16, 16", "line 1: @tune lists a value twice: 16, 16"),
    ("#define T 1 // @tune 1, 2\n#define T 2 // @tune 3", "line 2: T is marked @tune twice"),
])
def test_bad_markers_name_their_line(code, expected):
    with pytest.raises(TuneError) as err:
        find_params(code)
    assert str(err.value).startswith(expected)


def test_too_many_variants_are_refused_with_the_count():
    with pytest.raises(TuneError, match=r"make 3 \(TILE\) x 2 \(ROWS\) = 6 variants; at most 4"):
        settings(find_params(TUNED), limit=4)


# -- splicing ------------------------------------------------------------------------------------

NAMESPACED = """#include <cstdio>
namespace ops {
// doc
template <typename T>
__global__ void scale(T* x, const T a, int n) { x[0] = a; }
}
void host() { }
"""


def test_splice_replaces_the_whole_definition_and_hoists_includes():
    kernel = parse_source(NAMESPACED).kernel("scale")
    code = ("#include <cuda_fp16.h>\n#include <cstdio>\n#define B 4\ntemplate <typename T>\n"
            "__global__ void scale(T* x, const T a, int n)\n{\n    x[0] = a * B;\n}")
    out = splice(NAMESPACED, kernel, code)
    lines = out.text.split("\n")
    assert lines[:5] == ["#include <cstdio>", "#include <cuda_fp16.h>", "namespace ops {",
                         "// doc", "#define B 4"]
    assert lines[9:12] == ["}", "}", "void host() { }"]
    assert out.text.count("template <typename T>") == 1
    assert [out.code_line(i) for i in (1, 2, 4, 5, 9, 10, 11)] == [None, None, None, 3, 7, 8, None]
    assert lines[9 - 1] == "    x[0] = a * B;"


def test_runner_compile_logs_map_to_the_models_lines():
    kernel = parse_source(SAXPY).kernel("saxpy")
    code = "__global__ void saxpy(int n, float a, const float* x, float* y)\n{\n    y[0] = q;\n}"
    out = splice(SAXPY, kernel, code)
    file_line = next(i for i in range(1, 40) if out.code_line(i) == 3)
    log = (f"/tmp/tmpab12/kernel.cu({file_line}): error: identifier \"q\" is undefined\n"
           f"1 error detected in the compilation of \"/tmp/tmpab12/kernel.cu\".")
    [problem] = map_compiler_log(log, out, code)
    assert (problem.line, problem.file_line) == (3, file_line)
    assert str(problem) == ('line 3 of your code: error: identifier "q" is undefined\n'
                            '    3 | y[0] = q;')


@needs_nvcc
def test_the_precheck_reports_nvcc_errors_at_the_models_lines():
    kernel = parse_source(SAXPY).kernel("saxpy")
    code = ("#define VEC 4\n__global__ void saxpy(int n, float a, const float* x, float* y)\n{\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) y[i] = a * xx[i];\n}")
    result = precheck(splice(SAXPY, kernel, code), code, "saxpy.cu", "sm_90", "saxpy")
    assert result is not None and not result.ok
    first = result.problems[0]
    assert first.line == 5
    assert str(first).startswith('line 5 of your code: error: identifier "xx" is undefined\n'
                                 '    5 | if (i < n) y[i] = a * xx[i];')
