import { test } from "node:test";
import * as assert from "node:assert/strict";
import { keyEnvOf, logLevelOf, serverLaunch } from "../common/launch";

test("the server runs cudalens.cli_lsp with the log level, then the extra arguments", () => {
  const launch = serverLaunch("/venv/bin/python", ["--runner-factory", "replay_runner:make_client"],
    { PYTHONPATH: "/repo/tests/data/lsp" }, "info", undefined);
  assert.equal(launch.command, "/venv/bin/python");
  assert.deepEqual(launch.args, ["-m", "cudalens.cli_lsp", "--log-level", "info",
    "--runner-factory", "replay_runner:make_client"]);
  assert.deepEqual(launch.env, { PYTHONPATH: "/repo/tests/data/lsp", PYTHONUNBUFFERED: "1" });
});

test("the LLM API key from secret storage goes into OPENAI_API_KEY only when stored", () => {
  assert.equal(serverLaunch("py", [], {}, "warning", "sk-123").env.OPENAI_API_KEY, "sk-123");
  assert.ok(!("OPENAI_API_KEY" in serverLaunch("py", [], {}, "warning", "").env));
});

test("a secret in cudalens.server.env is refused, naming the variable and the command", () => {
  assert.throws(() => serverLaunch("py", [], { OPENAI_API_KEY: "sk" }, "warning", undefined),
    { message: "cudalens.server.env: OPENAI_API_KEY is a secret; set it with the command " +
      "'cudalens: Set LLM API Key' instead of in settings" });
});

test("an unknown log level falls back to warning", () => {
  assert.equal(logLevelOf("debug"), "debug");
  assert.equal(logLevelOf("loud"), "warning");
  assert.equal(logLevelOf(undefined), "warning");
});

test("the stored key goes into the variable cudalens.llm.apiKeyEnv names, else OPENAI_API_KEY", () => {
  const env = serverLaunch("py", [], {}, "warning", "sk-9", keyEnvOf("VLLM_API_KEY")).env;
  assert.deepEqual(env, { PYTHONUNBUFFERED: "1", VLLM_API_KEY: "sk-9" });
  assert.equal(keyEnvOf(null), "OPENAI_API_KEY");
  assert.equal(keyEnvOf(""), "OPENAI_API_KEY");
  // a key pasted instead of a name is never used as a variable name (it would be logged)
  assert.equal(keyEnvOf("sk-abc.def"), "OPENAI_API_KEY");
  assert.equal(keyEnvOf("1ABC"), "OPENAI_API_KEY");
});

test("cudalens.server.env may not set the variable apiKeyEnv names either", () => {
  assert.throws(() => serverLaunch("py", [], { VLLM_API_KEY: "sk" }, "warning", undefined, "VLLM_API_KEY"),
    { message: "cudalens.server.env: VLLM_API_KEY is a secret; set it with the command " +
      "'cudalens: Set LLM API Key' instead of in settings" });
  assert.equal(serverLaunch("py", [], { VLLM_API_KEY: "x" }, "warning", undefined).env.VLLM_API_KEY, "x");
});
