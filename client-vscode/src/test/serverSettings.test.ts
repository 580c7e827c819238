import { test } from "node:test";
import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { serverSection, withRunnerToken } from "../common/serverSettings";

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

// -- the section as the server receives it -------------------------------------------------

const ROOT = path.resolve(__dirname, "../..");  // out/test -> client-vscode
const properties = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"))
  .contributes.configuration.properties as Record<string, { default?: unknown }>;

/** What `workspace.getConfiguration().get("cudalens")` gives for `values` (flat setting ids ->
 * values): the dotted ids below `cudalens.` nested into objects, as VS Code does. */
function section(values: Record<string, unknown>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [id, value] of Object.entries(values)) {
    const parts = id.split(".").slice(1);
    let node = root;
    for (const part of parts.slice(0, -1)) {
      node = (node[part] ??= {}) as Record<string, unknown>;
    }
    node[parts[parts.length - 1]] = value;
  }
  return root;
}

const defaults = Object.fromEntries(Object.entries(properties).map(([id, p]) => [id, p.default]));

test("the declared defaults reach the server in config.py's shape", () => {
  const answer = serverSection(section(defaults), "t0k", false);
  // what server/cudalens/lsp/config.py reads; interpreter, server and trace it ignores
  assert.deepEqual(answer, {
    interpreter: "",
    runner: { url: "", token: "t0k" },
    proposer: "auto",
    llm: { baseUrl: "", model: "", apiKeyEnv: null, temperature: null, rounds: null,
      candidatesPerRound: null, timeBudgetSeconds: null, tokenBudget: null },
    budget: { candidates: 24, repetitions: 50, seed: 0 },
    check: { enabled: true, arch: "sm_90", nvcc: "nvcc", debounceMs: 400, options: [] },
    profile: true,
    sanitize: true,
    capture: { command: "" },
    server: { args: [], env: {}, logLevel: "warning" },
    trace: { server: "off" },
    workspaceTrusted: false,
  });
});

test("set llm values and profile reach the server as numbers, a name and a boolean", () => {
  const answer = serverSection(section({ ...defaults, "cudalens.profile": false,
    "cudalens.llm.apiKeyEnv": "VLLM_API_KEY", "cudalens.llm.temperature": 0.2,
    "cudalens.llm.rounds": 3, "cudalens.llm.candidatesPerRound": 4,
    "cudalens.llm.timeBudgetSeconds": 90.5, "cudalens.llm.tokenBudget": 0 }), undefined, true);
  assert.equal(answer.workspaceTrusted, true);
  assert.equal(answer.profile, false);
  assert.deepEqual(answer.llm, { baseUrl: "", model: "", apiKeyEnv: "VLLM_API_KEY",
    temperature: 0.2, rounds: 3, candidatesPerRound: 4, timeBudgetSeconds: 90.5, tokenBudget: 0 });
  assert.deepEqual(answer.runner, { url: "" });
});

test("a cleared apiKeyEnv (empty string) is sent as unset, not as a malformed name", () => {
  const input = { llm: { apiKeyEnv: "", model: "m" } };
  assert.deepEqual(serverSection(input, undefined, false),
    { llm: { model: "m" }, runner: {}, workspaceTrusted: false });
  assert.deepEqual(input, { llm: { apiKeyEnv: "", model: "m" } });  // input unchanged
  assert.deepEqual(serverSection({ llm: { apiKeyEnv: "MY_KEY" } }, undefined, false),
    { llm: { apiKeyEnv: "MY_KEY" }, runner: {}, workspaceTrusted: false });
});

test("workspaceTrusted is VS Code's workspace trust, whatever a settings file says", () => {
  const claims = { workspaceTrusted: true, llm: { baseUrl: "http://elsewhere/v1" } };
  assert.deepEqual(serverSection(claims, undefined, false),
    { workspaceTrusted: false, llm: { baseUrl: "http://elsewhere/v1" }, runner: {} });
  assert.equal(serverSection({}, undefined, true).workspaceTrusted, true);
  assert.equal(claims.workspaceTrusted, true);  // input unchanged
});

test("settings that choose where a secret goes or what runs are restricted in an untrusted workspace", () => {
  const capability = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"))
    .capabilities.untrustedWorkspaces as { supported: string; restrictedConfigurations: string[] };
  assert.equal(capability.supported, "limited");
  for (const id of ["cudalens.llm.baseUrl", "cudalens.llm.apiKeyEnv", "cudalens.runner.url",
    "cudalens.check.nvcc", "cudalens.check.options", "cudalens.interpreter",
    "cudalens.server.args", "cudalens.server.env", "cudalens.capture.command"]) {
    assert.ok(capability.restrictedConfigurations.includes(id), id);
  }
});

test("every setting config.py reads is declared, except the token (secret storage only) and workspace trust (VS Code's)", () => {
  const config = readFileSync(path.join(ROOT, "../server/cudalens/lsp/config.py"), "utf8");
  const table = config.slice(config.indexOf("_FIELDS: dict"), config.indexOf("assert {f for f"));
  const paths = [...table.matchAll(/^\s+\(((?:"\w+",?\s*)+)\): \("/gm)]
    .map((m) => "cudalens." + [...m[1].matchAll(/"(\w+)"/g)].map((p) => p[1]).join("."));
  assert.ok(paths.length >= 20, `expected config.py's _FIELDS table, found ${paths.length} paths`);
  const computed = ["cudalens.runner.token", "cudalens.workspaceTrusted"];
  const missing = paths.filter((p) => !computed.includes(p) && !(p in properties));
  assert.deepEqual(missing, []);
  assert.ok(paths.includes("cudalens.workspaceTrusted"));
  for (const id of computed) {
    assert.ok(!(id in properties), id);
  }
});
