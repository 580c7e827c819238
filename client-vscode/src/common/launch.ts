/**
 * How the language server process is started: `<python> -m cudalens.cli_lsp ...`, with the
 * extra arguments and environment of the settings and the LLM API key (from secret storage)
 * in the variable `cudalens.llm.apiKeyEnv` names (`OPENAI_API_KEY` when unset). Pure: no `vscode` import, so unit tests load it.
 */

export interface Launch {
  command: string;
  args: string[];
  /** Variables to add to the editor's environment for the server process. */
  env: Record<string, string>;
}

export const LOG_LEVELS = ["debug", "info", "warning", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Environment variables an extra `cudalens.server.env` may not set: secrets come from secret storage. */
export const SECRET_ENV = ["OPENAI_API_KEY"] as const;

/** The variable the stored LLM API key goes into when `cudalens.llm.apiKeyEnv` is unset; the
 * agent's default `api_key_env` (server/cudalens/agent/config.py). */
export const DEFAULT_KEY_ENV = "OPENAI_API_KEY";

/** What the server accepts as a variable name (server/cudalens/lsp/config.py `_ENV_NAME`). */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The environment variable the stored LLM API key is put in: `cudalens.llm.apiKeyEnv` when it
 * is a variable name, else `OPENAI_API_KEY`. A value that is not a name (empty, unset, or a
 * key pasted by mistake) is never used as one, so it cannot reach the environment or the log.
 */
export function keyEnvOf(apiKeyEnv: unknown): string {
  return typeof apiKeyEnv === "string" && ENV_NAME.test(apiKeyEnv) ? apiKeyEnv : DEFAULT_KEY_ENV;
}

/**
 * The server's command line.
 *
 * @param interpreter path of a Python with cudalens installed
 * @param extraArgs `cudalens.server.args`, appended after the built-in ones
 * @param extraEnv `cudalens.server.env`
 * @param logLevel `cudalens.server.logLevel`
 * @param llmApiKey the LLM API key from secret storage, or undefined
 * @param keyEnv the variable the key goes into (`keyEnvOf(cudalens.llm.apiKeyEnv)`)
 * @throws Error when `extraEnv` tries to set a secret variable (`OPENAI_API_KEY` or `keyEnv`),
 *   naming it
 */
export function serverLaunch(interpreter: string, extraArgs: readonly string[],
  extraEnv: Readonly<Record<string, string>>, logLevel: LogLevel,
  llmApiKey: string | undefined, keyEnv: string = DEFAULT_KEY_ENV): Launch {
  const secret: readonly string[] = [...SECRET_ENV, keyEnv];
  for (const name of Object.keys(extraEnv)) {
    if (secret.includes(name)) {
      throw new Error(`cudalens.server.env: ${name} is a secret; set it with the command ` +
        `'cudalens: Set LLM API Key' instead of in settings`);
    }
  }
  const env: Record<string, string> = { ...extraEnv, PYTHONUNBUFFERED: "1" };
  if (llmApiKey) {
    env[keyEnv] = llmApiKey;
  }
  return {
    command: interpreter,
    args: ["-m", "cudalens.cli_lsp", "--log-level", logLevel, ...extraArgs],
    env,
  };
}

/** `value` when it is one of the log levels, else "warning". */
export function logLevelOf(value: unknown): LogLevel {
  return (LOG_LEVELS as readonly unknown[]).includes(value) ? (value as LogLevel) : "warning";
}
