/**
 * Finding the Python that runs the server: `cudalens.interpreter`, else the Python
 * extension's interpreter for the workspace (through its API, `@vscode/python-extension`),
 * else `python3` on PATH (see interpreter.ts for the order).
 */
import * as vscode from "vscode";
import { PythonExtension } from "@vscode/python-extension";
import { chooseInterpreter, Interpreter } from "./interpreter";
import { getInterpreterSetting } from "./settings";

const PYTHON_EXTENSION_ID = "ms-python.python";

/** The Python extension's API, or undefined when it is not installed or fails to activate. */
async function pythonApi(log: vscode.LogOutputChannel): Promise<PythonExtension | undefined> {
  if (!vscode.extensions.getExtension(PYTHON_EXTENSION_ID)) {
    return undefined;
  }
  try {
    return await PythonExtension.api();
  } catch (err) {
    log.warn(`the Python extension is installed but its API failed: ${String(err)}`);
    return undefined;
  }
}

/** The executable of the Python extension's active environment for `resource`, if any. */
async function fromPythonExtension(log: vscode.LogOutputChannel,
  resource: vscode.Uri | undefined): Promise<string | undefined> {
  const api = await pythonApi(log);
  if (!api) {
    return undefined;
  }
  const active = api.environments.getActiveEnvironmentPath(resource);
  const env = await api.environments.resolveEnvironment(active);
  return env?.executable.uri?.fsPath;
}

/** The interpreter to start the server with, and where it came from. */
export async function resolveInterpreter(log: vscode.LogOutputChannel): Promise<Interpreter> {
  const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
  const setting = getInterpreterSetting();
  const fromExtension = setting ? undefined : await fromPythonExtension(log, resource);
  return chooseInterpreter(setting, fromExtension);
}

/** Calls `onChange` when the Python extension's active interpreter changes. */
export async function onPythonInterpreterChange(log: vscode.LogOutputChannel,
  onChange: () => void): Promise<vscode.Disposable | undefined> {
  const api = await pythonApi(log);
  return api?.environments.onDidChangeActiveEnvironmentPath(() => onChange());
}
