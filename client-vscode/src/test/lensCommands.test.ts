import { test } from "node:test";
import * as assert from "node:assert/strict";
import { clientCommand } from "../common/lensCommands";

test("show diff, apply and reject go through the extension; other commands stay the server's", () => {
  assert.equal(clientCommand("cudalens.showDiff"), "cudalens.diff.show");
  assert.equal(clientCommand("cudalens.apply"), "cudalens.diff.accept");
  assert.equal(clientCommand("cudalens.reject"), "cudalens.diff.reject");
  assert.equal(clientCommand("cudalens.optimize"), "cudalens.optimize");
  assert.equal(clientCommand("cudalens.cancel"), "cudalens.cancel");
  assert.equal(clientCommand(""), "");
});
