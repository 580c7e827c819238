import { test } from "node:test";
import * as assert from "node:assert/strict";
import { withRunnerToken } from "../common/serverSettings";

test("the stored token is added under runner.token, other settings kept", () => {
  const section = { runner: { url: "http://gpu:8765" }, budget: { candidates: 8 } };
  assert.deepEqual(withRunnerToken(section, "t0k"),
    { runner: { url: "http://gpu:8765", token: "t0k" }, budget: { candidates: 8 } });
  // the input is not changed
  assert.deepEqual(section, { runner: { url: "http://gpu:8765" }, budget: { candidates: 8 } });
});

test("a token written in a settings file is dropped: only secret storage counts", () => {
  assert.deepEqual(withRunnerToken({ runner: { url: "u", token: "from-settings" } }, undefined),
    { runner: { url: "u" } });
  assert.deepEqual(withRunnerToken({ runner: { token: "from-settings" } }, "secret"),
    { runner: { token: "secret" } });
});

test("a missing or malformed section gives an object with only the token", () => {
  assert.deepEqual(withRunnerToken(null, "t"), { runner: { token: "t" } });
  assert.deepEqual(withRunnerToken([1, 2], undefined), { runner: {} });
  assert.deepEqual(withRunnerToken({ runner: "x" }, "t"), { runner: { token: "t" } });
});
