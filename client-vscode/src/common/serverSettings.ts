/**
 * The `cudalens` settings object the server reads with `workspace/configuration`, with the
 * runner token from secret storage added (`serverSection`). The token never goes into a settings file; it is
 * added to the answer the server receives. Pure (no `vscode`).
 */

/** Keys of VS Code's SecretStorage for this extension. */
export const SECRET_RUNNER_TOKEN = "cudalens.runner.token";
export const SECRET_LLM_API_KEY = "cudalens.llm.apiKey";

type Json = { [key: string]: unknown };

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A copy of `section` (the client's `cudalens` settings; anything not an object counts as
 * empty) with `runner.token` set to `token` when a token is stored, and with any token a
 * settings file holds removed (it is read from secret storage only). The input is not changed.
 */
export function withRunnerToken(section: unknown, token: string | undefined): Json {
  const copy: Json = isObject(section) ? structuredClone(section) : {};
  const runner: Json = isObject(copy.runner) ? { ...copy.runner } : {};
  delete runner.token;
  if (token) {
    runner.token = token;
  }
  copy.runner = runner;
  return copy;
}

/**
 * The `cudalens` section as the server reads it (server/cudalens/lsp/config.py): `section`
 * with the runner token from secret storage (`withRunnerToken`), `workspaceTrusted` set to
 * `trusted` (VS Code's workspace trust, `vscode.workspace.isTrusted`; whatever a settings file
 * says there is replaced, so a workspace cannot declare itself trusted), and an empty
 * `llm.apiKeyEnv` (what the settings editor leaves when the field is cleared) removed, so it
 * means "unset" (the project file's name, else OPENAI_API_KEY) rather than a malformed name.
 * Everything else passes unchanged: null for an unset `llm` number keeps the project file's or
 * the default value on the server. The input is not changed.
 */
export function serverSection(section: unknown, token: string | undefined, trusted: boolean): Json {
  const copy = withRunnerToken(section, token);
  copy.workspaceTrusted = trusted;
  if (isObject(copy.llm) && copy.llm.apiKeyEnv === "") {
    const llm: Json = { ...copy.llm };
    delete llm.apiKeyEnv;
    copy.llm = llm;
  }
  return copy;
}
