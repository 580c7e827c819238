/**
 * Reading the `cudalens.*` settings and the secrets (runner token, LLM API key) kept in VS
 * Code's SecretStorage, and the commands that set them. Secrets never go to settings files.
 */
import * as vscode from "vscode";
import { keyEnvOf, logLevelOf, LogLevel } from "./launch";
import { SECRET_LLM_API_KEY, SECRET_RUNNER_TOKEN } from "./serverSettings";

export const SECTION = "cudalens";

/** Settings whose change needs a new server process (not only a settings reload). */
export const RESTART_SETTINGS = ["cudalens.interpreter", "cudalens.server.args",
  "cudalens.server.env", "cudalens.server.logLevel",
  "cudalens.llm.apiKeyEnv"]; // names the variable the stored LLM API key is put in

export function getInterpreterSetting(): string {
  return vscode.workspace.getConfiguration(SECTION).get<string>("interpreter", "");
}

export interface ServerConfig {
  args: string[];
  env: Record<string, string>;
  logLevel: LogLevel;
  /** The variable the stored LLM API key goes into (`keyEnvOf(cudalens.llm.apiKeyEnv)`). */
  keyEnv: string;
}

/**
 * `cudalens.server.*`, and the variable the stored LLM API key goes into.
 * @throws Error when `server.args` is not a list of strings or `server.env` not an object of strings
 */
export function getServerConfig(): ServerConfig {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const args = cfg.get<unknown>("server.args", []);
  if (!Array.isArray(args) || !args.every((a) => typeof a === "string")) {
    throw new Error(`cudalens.server.args: expected a list of strings, found ${JSON.stringify(args)}`);
  }
  const env = cfg.get<unknown>("server.env", {});
  if (typeof env !== "object" || env === null || Array.isArray(env) ||
      !Object.values(env).every((v) => typeof v === "string")) {
    throw new Error(`cudalens.server.env: expected an object of strings, found ${JSON.stringify(env)}`);
  }
  return { args, env: env as Record<string, string>, logLevel: logLevelOf(cfg.get("server.logLevel")),
    keyEnv: keyEnvOf(cfg.get("llm.apiKeyEnv")) };
}

/** The secrets of this extension, read from SecretStorage. */
export class Secrets {
  constructor(private readonly storage: vscode.SecretStorage) {}

  runnerToken(): Thenable<string | undefined> {
    return this.storage.get(SECRET_RUNNER_TOKEN);
  }

  llmApiKey(): Thenable<string | undefined> {
    return this.storage.get(SECRET_LLM_API_KEY);
  }

  /** Calls `listener` with the changed secret's key. */
  onDidChange(listener: (key: string) => void): vscode.Disposable {
    return this.storage.onDidChange((e) => listener(e.key));
  }

  /** Asks for a secret (a password box) and stores it; an empty answer deletes it. */
  async prompt(key: string, what: string): Promise<boolean> {
    const value = await vscode.window.showInputBox({
      title: `cudalens: ${what}`,
      prompt: `Kept in VS Code's secret storage, never in settings. Leave empty to remove it.`,
      password: true,
      ignoreFocusOut: true,
    });
    if (value === undefined) {
      return false;
    }
    if (value) {
      await this.storage.store(key, value);
    } else {
      await this.storage.delete(key);
    }
    return true;
  }

  async clear(): Promise<void> {
    await this.storage.delete(SECRET_RUNNER_TOKEN);
    await this.storage.delete(SECRET_LLM_API_KEY);
  }
}
