/**
 * Which Python runs the server: the `cudalens.interpreter` setting when set, else the Python
 * extension's interpreter for the workspace, else `python3` from PATH. Pure (no `vscode`).
 */

export type InterpreterSource = "setting" | "python extension" | "PATH";

export interface Interpreter {
  path: string;
  source: InterpreterSource;
}

/**
 * @param setting `cudalens.interpreter` (blank: unset)
 * @param fromPythonExtension the Python extension's executable, or undefined when that
 *   extension is absent or has no interpreter
 */
export function chooseInterpreter(setting: string | undefined,
  fromPythonExtension: string | undefined): Interpreter {
  const configured = (setting ?? "").trim();
  if (configured) {
    return { path: configured, source: "setting" };
  }
  if (fromPythonExtension && fromPythonExtension.trim()) {
    return { path: fromPythonExtension.trim(), source: "python extension" };
  }
  return { path: "python3", source: "PATH" };
}

/** The message shown when the server cannot start with `interpreter`: what to do about it. */
export function missingServerHelp(interpreter: Interpreter, error: string): string {
  return `cudalens: the language server did not start with ${interpreter.path} ` +
    `(from ${interpreter.source}): ${error}. Install cudalens into that Python ` +
    "(pip install cudalens, or pip install -e . in a checkout), or set cudalens.interpreter " +
    "to a Python that has it.";
}
