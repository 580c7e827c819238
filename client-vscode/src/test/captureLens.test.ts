import { test } from "node:test";
import * as assert from "node:assert/strict";
import { CAPTURE_COMMAND, captureArgsAt, opensBeside } from "../common/captureLens";

const lens = (line: number, command: string, kernel: string) =>
  ({ range: { start: { line } }, command: { command, arguments: [{ kernel }] } });

test("the capture lens of the kernel holding the cursor line", () => {
  const lenses = [lens(3, "cudalens.optimize", "a"), lens(3, CAPTURE_COMMAND, "a"),
    lens(12, CAPTURE_COMMAND, "b"), lens(12, "cudalens.optimize", "b")];
  assert.deepEqual(captureArgsAt(lenses, 3), { kernel: "a" });
  assert.deepEqual(captureArgsAt(lenses, 11), { kernel: "a" });
  assert.deepEqual(captureArgsAt(lenses, 40), { kernel: "b" });
  assert.equal(captureArgsAt(lenses, 2), undefined);
  assert.equal(captureArgsAt([lens(0, "cudalens.optimize", "a")], 5), undefined);
});

test("a drafted spec (shown without focus) opens beside; a requested document does not", () => {
  assert.equal(opensBeside({ takeFocus: false }), true);
  assert.equal(opensBeside({ takeFocus: true }), false);
  assert.equal(opensBeside({}), false);
  assert.equal(opensBeside({ takeFocus: false, external: true }), false);
});
