/**
 * How the language server process is started: `<python> -m cudalens.cli_lsp ...`, with the
 * extra arguments and environment of the settings and the LLM API key (from secret storage)
 * in `OPENAI_API_KEY`. Pure: no `vscode` import, so unit tests load it.
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

/**
 * The server's command line.
 *
 * @param interpreter path of a Python with cudalens installed
 * @param extraArgs `cudalens.server.args`, appended after the built-in ones
 * @param extraEnv `cudalens.server.env`
 * @param logLevel `cudalens.server.logLevel`
 * @param llmApiKey the LLM API key from secret storage, or undefined
 * @throws Error when `extraEnv` tries to set a secret variable, naming it
 */
export function serverLaunch(interpreter: string, extraArgs: readonly string[],
  extraEnv: Readonly<Record<string, string>>, logLevel: LogLevel,
  llmApiKey: string | undefined): Launch {
  for (const name of Object.keys(extraEnv)) {
    if ((SECRET_ENV as readonly string[]).includes(name)) {
      throw new Error(`cudalens.server.env: ${name} is a secret; set it with the command ` +
        `'cudalens: Set LLM API Key' instead of in settings`);
    }
  }
  const env: Record<string, string> = { ...extraEnv, PYTHONUNBUFFERED: "1" };
  if (llmApiKey) {
    env.OPENAI_API_KEY = llmApiKey;
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
