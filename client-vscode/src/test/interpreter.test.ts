import { test } from "node:test";
import * as assert from "node:assert/strict";
import { chooseInterpreter, missingServerHelp } from "../common/interpreter";

test("the setting overrides the Python extension", () => {
  assert.deepEqual(chooseInterpreter(" /opt/py/bin/python ", "/venv/bin/python"),
    { path: "/opt/py/bin/python", source: "setting" });
});

test("without the setting the Python extension's interpreter is used", () => {
  assert.deepEqual(chooseInterpreter("", "/venv/bin/python"),
    { path: "/venv/bin/python", source: "python extension" });
  assert.deepEqual(chooseInterpreter(undefined, "/venv/bin/python"),
    { path: "/venv/bin/python", source: "python extension" });
});

test("without either, python3 from PATH", () => {
  assert.deepEqual(chooseInterpreter("  ", undefined), { path: "python3", source: "PATH" });
  assert.deepEqual(chooseInterpreter("", " "), { path: "python3", source: "PATH" });
});

test("the start failure message names the interpreter, its source and the fix", () => {
  const text = missingServerHelp({ path: "python3", source: "PATH" }, "No module named cudalens");
  assert.equal(text, "cudalens: the language server did not start with python3 (from PATH): " +
    "No module named cudalens. Install cudalens into that Python (pip install cudalens, or " +
    "pip install -e . in a checkout), or set cudalens.interpreter to a Python that has it.");
});
