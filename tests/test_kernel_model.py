"""The one syntax layer (``cudalens/kernel_model/``): a text is parsed by tree-sitter once,
whoever asks (the CLI's target, spec validation and inference, the optimizer's context and
every pass), and a kernel's nodes are looked up once per (text, kernel) into one
``KernelModel`` that spec inference and the optimizer share."""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudalens.cli import main
from cudalens.kernel_model import syntax
from cudalens.kernel_model.model import (kernel_model, readable_body, readable_body_or,
                                         UnreadableBody)
from cudalens.optimizer.context import make_context
from cudalens.source.parser import parse_source
from cudalens.spec import infer as infer_module
from cudalens.spec.infer import infer_spec

sys.path.insert(0, str(Path(__file__).absolute().parent))

from parse_counts import count_parses  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SAXPY = """\
__global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture
def parses(monkeypatch):
    """Every tree-sitter parse from here on: (bytes parsed, caller), with the cache emptied."""
    yield count_parses(monkeypatch)
    syntax.clear_parses()


@pytest.mark.parametrize("name", ["saxpy", "layernorm", "matmul", "reduce_sum", "transpose"])
def test_one_plan_parses_each_distinct_text_once(parses, name):
    path = EXAMPLES / f"{name}.cu"
    res = CliRunner().invoke(main, ["plan", str(path)])
    assert res.exit_code == 0, res.output
    assert re.match(rf"plan for \w+ in {re.escape(str(path))} \(no GPU used\): \d+ "
                    rf"candidate\(s\), 8 per runner call\n", res.output), res.output
    counts = collections.Counter(data for data, _ in parses)
    again = {data[:60]: [w for d, w in parses if d == data] for data, n in counts.items()
             if n > 1}
    assert not again, again
    assert counts[path.read_bytes()] == 1
    # the rewritten candidates' texts are parsed too, each once (the plan lists candidates)
    assert len(counts) > 2
    assert all(where.startswith("syntax.py:") for _, where in parses), \
        sorted({where for _, where in parses})


def test_spec_inference_and_the_optimizer_context_share_the_kernel_model(monkeypatch):
    syntax.clear_parses()
    built = []
    real = infer_module.kernel_model

    def recording(text, kernel):
        built.append(real(text, kernel))
        return built[-1]

    monkeypatch.setattr(infer_module, "kernel_model", recording)
    kernel = parse_source(SAXPY, "saxpy.cu").kernels[0]
    spec = infer_spec(kernel, SAXPY, ())
    ctx = make_context(SAXPY, "saxpy.cu", "saxpy", spec)
    assert len(built) == 1
    model = built[0]
    assert ctx.model is model
    assert kernel_model(SAXPY, kernel) is model
    assert model.parsed is syntax.parse(SAXPY) and model.text == SAXPY
    assert model.definition.type == "function_definition"
    assert [model.parsed.text_of(p) for p in model.parameters] == \
        ["int n", "float a", "const float* x", "float* y"]
    assert model.body == model.definition.child_by_field_name("body") == model.loose_body
    assert (model.body.start_byte, model.body.end_byte) == \
        (kernel.body_start_byte, kernel.body_end_byte)
    assert model.salvaged_body() == (model.parsed, model.body)
    assert readable_body(ctx) == (model.parsed, model.body)


def test_a_body_with_a_parse_error_is_unreadable_for_the_passes_and_salvaged_for_specs():
    text = SAXPY.replace("int i =", "int i = FOO(;\n    int j =")
    kernel = parse_source(text, "k.cu").kernels[0]
    ctx = make_context(text, "k.cu", "saxpy", infer_spec(parse_source(SAXPY).kernels[0],
                                                        SAXPY, ()))
    model = ctx.model
    assert model.definition is not None
    with pytest.raises(UnreadableBody, match=r"^tree-sitter cannot read the body of saxpy at "
                                             r"line 2 \(often a macro\); the pass needs the "
                                             r"whole body$"):
        readable_body(ctx)
    parsed, body = model.salvaged_body()
    assert parsed is model.parsed and body is not None and body.type == "compound_statement"
    assert kernel.has_errors


def test_readable_body_or_raises_the_recognizers_own_exception_with_the_reason():
    class NotMine(Exception):
        pass

    text = SAXPY.replace("int i =", "int i = FOO(;\n    int j =")
    spec = infer_spec(parse_source(SAXPY).kernels[0], SAXPY, ())
    with pytest.raises(NotMine) as raised:
        readable_body_or(make_context(text, "k.cu", "saxpy", spec), NotMine)
    assert raised.value.args == ("tree-sitter cannot read the body of saxpy at line 2 (often a "
                                 "macro); the pass needs the whole body",)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    ctx = make_context(SAXPY, "k.cu", "saxpy", spec)
    assert readable_body_or(ctx, NotMine) == readable_body(ctx)


def test_short_text_folds_white_space_and_cuts_at_the_limit():
    parsed = syntax.parse("int f() {\n    return  alpha\t+\n beta;\n}\n"
                          "int g() { return " + " + ".join(f"v{i}" for i in range(30)) + "; }\n")
    f_body, g_body = (fn.child_by_field_name("body") for fn in parsed.tree.root_node.children)
    assert syntax.short_text(parsed, f_body) == "{ return alpha + beta; }"
    assert len(parsed.text_of(g_body)) == 179  # one line: nothing to fold
    assert syntax.short_text(parsed, g_body) == parsed.text_of(g_body)[:57] + "..."
    assert syntax.short_text(parsed, g_body, 70) == parsed.text_of(g_body)[:67] + "..."
    assert syntax.short_text(parsed, g_body, 179) == parsed.text_of(g_body)
    assert syntax.short_text(parsed, g_body, 178) == parsed.text_of(g_body)[:175] + "..."


def test_the_same_text_is_one_parsed_value_and_remembered_trees_come_first():
    syntax.clear_parses()
    first = syntax.parse(SAXPY)
    assert syntax.parse(SAXPY) is first and first.data == SAXPY.encode()
    tree = syntax.new_parser().parse(SAXPY.encode())
    remembered = syntax.remember(SAXPY, tree)
    assert syntax.parse(SAXPY) is remembered and remembered.tree is tree
    assert remembered is not first and remembered == syntax.Parsed(SAXPY, SAXPY.encode(), tree)
    with pytest.raises(ValueError, match=r"^syntax\.remember: expected a tree of the 5-byte "
                                         r"text, found one spanning bytes 0\.\.\d+$"):
        syntax.remember("int;\n", tree)
