import { test } from "node:test";
import * as assert from "node:assert/strict";
import { panelKey, parseReportArgs, reportArgsOf } from "../common/reportLens";

const uri = "file:///w/saxpy.cu";

test("the report lens goes beside 'Optimize again', with the kernel's uri and name", () => {
  assert.deepEqual(reportArgsOf({ title: "Optimize again", command: "cudalens.optimize",
    arguments: [{ uri, kernel: "saxpy", version: 3 }] }), { uri, kernel: "saxpy" });
});

test("no report lens before a run, nor beside other lenses", () => {
  assert.equal(reportArgsOf({ title: "Optimize", command: "cudalens.optimize",
    arguments: [{ uri, kernel: "saxpy" }] }), undefined);
  assert.equal(reportArgsOf({ title: "1.28x faster candidate: show diff", command: "cudalens.diff.show",
    arguments: [{ uri, kernel: "saxpy", candidate: "c" }] }), undefined);
  assert.equal(reportArgsOf({ title: "Optimize again", command: "cudalens.optimize" }), undefined);
  assert.equal(reportArgsOf(undefined), undefined);
});

test("a report command argument is checked, and names its panel", () => {
  assert.deepEqual(parseReportArgs({ uri, kernel: "k", version: 1 }), { uri, kernel: "k" });
  assert.throws(() => parseReportArgs({ uri }), /expected an object with string uri and kernel, found \{"uri":/);
  assert.throws(() => parseReportArgs(undefined), /found undefined/);
  assert.equal(panelKey({ uri, kernel: "k" }), `${uri}#k`);
});
