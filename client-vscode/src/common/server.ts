/**
 * Starting and stopping the cudalens language server (`python -m cudalens.cli_lsp`) with
 * vscode-languageclient. The runner token reaches the server in the answer to its
 * `workspace/configuration` request (middleware), the LLM API key in its environment
 * (in the variable `cudalens.llm.apiKeyEnv` names, `OPENAI_API_KEY` when unset). The same
 * answer carries `workspaceTrusted` (VS Code's workspace trust): only in a trusted workspace
 * may the project's cudalens.toml choose the LLM server and the key's variable.
 */
import * as vscode from "vscode";
import {
  CodeActionRequest, CodeLensRequest, Command, DidChangeConfigurationNotification, ExecuteCommandRequest,
  LanguageClient, LanguageClientOptions, ServerOptions, TransportKind,
} from "vscode-languageclient/node";
import { captureArgsAt, opensBeside } from "./captureLens";
import { Interpreter } from "./interpreter";
import { showProgressAsNotifications } from "./progress";
import { serverLaunch } from "./launch";
import { clientCommand } from "./lensCommands";
import { REPORT_TITLE, reportArgsOf, SHOW_REPORT } from "./reportLens";
import { serverSection } from "./serverSettings";
import { getServerConfig, SECTION, Secrets } from "./settings";

export const CUDA_SELECTOR = [{ scheme: "file", language: "cuda-cpp" }];

function swapCommand(command: vscode.Command | undefined): void {
  if (command) {
    command.command = clientCommand(command.command);
  }
}

/** `lenses` with a "Show kernel report" lens after each kernel's "Optimize again" lens. */
function withReportLenses(lenses: vscode.CodeLens[] | null | undefined): vscode.CodeLens[] | null | undefined {
  if (!lenses) {
    return lenses;
  }
  return lenses.flatMap((lens) => {
    const args = reportArgsOf(lens.command);
    return args ? [lens, new vscode.CodeLens(lens.range, { title: REPORT_TITLE, command: SHOW_REPORT, arguments: [args] })]
      : [lens];
  });
}

/**
 * A started client for `interpreter`.
 * @throws Error when the settings are malformed or the server does not start
 */
export async function startServer(interpreter: Interpreter, secrets: Secrets,
  log: vscode.LogOutputChannel): Promise<LanguageClient> {
  const cfg = getServerConfig();
  const launch = serverLaunch(interpreter.path, cfg.args, cfg.env, cfg.logLevel,
    await secrets.llmApiKey(), cfg.keyEnv);
  log.info(`starting: ${launch.command} ${launch.args.join(" ")} (interpreter from ${interpreter.source}; ` +
    `extra environment: ${Object.keys(launch.env).join(", ")})`);
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const serverOptions: ServerOptions = {
    command: launch.command,
    args: launch.args,
    transport: TransportKind.stdio,
    options: { env: { ...process.env, ...launch.env }, cwd },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: CUDA_SELECTOR,
    outputChannel: log,
    traceOutputChannel: log,
    middleware: {
      window: {
        // the spec a capture drafted opens beside the kernel, without taking focus
        showDocument: async (params, token, next) => {
          if (!opensBeside(params)) {
            return next(params, token);
          }
          await vscode.window.showTextDocument(vscode.Uri.parse(params.uri),
            { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true, preview: false });
          return { success: true };
        },
      },
      workspace: {
        configuration: async (params, token, next) => {
          const answer = await next(params, token);
          if (!Array.isArray(answer)) {
            return answer;
          }
          const runnerToken = await secrets.runnerToken();
          const trusted = vscode.workspace.isTrusted;
          return answer.map((value, i) => params.items[i]?.section === SECTION
            ? serverSection(value, runnerToken, trusted) : value);
        },
      },
      provideCodeLenses: async (document, token, next) => {
        const lenses = await next(document, token);
        lenses?.forEach((lens) => swapCommand(lens.command));
        return withReportLenses(lenses);
      },
      provideCodeActions: async (document, range, context, token, next) => {
        const actions = await next(document, range, context, token);
        actions?.forEach((a) => {
          if (a instanceof vscode.CodeAction) {
            swapCommand(a.command);
          } else {
            swapCommand(a as vscode.Command);
          }
        });
        return actions;
      },
    },
  };
  const client = new LanguageClient(SECTION, "cudalens", serverOptions, clientOptions);
  await client.start();
  showProgressAsNotifications(client, (message) => {
    if (message) {
      vscode.window.setStatusBarMessage(`cudalens: ${message}`, 15000);
    }
  });
  return client;
}

/** Asks the server to read its settings again (it pulls them, token included). */
export function settingsChanged(client: LanguageClient): Promise<void> {
  return client.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
}

/** Runs the server command `command` with one argument and returns its JSON answer. */
export function runServerCommand<T>(client: LanguageClient, command: string, arg?: object): Promise<T> {
  return client.sendRequest(ExecuteCommandRequest.type,
    { command, arguments: arg === undefined ? [] : [arg] }) as Promise<T>;
}

/** The argument of the server's capture lens of the kernel at `line` of `document`, if any. */
export async function captureArgsAtLine(client: LanguageClient, document: vscode.TextDocument,
  line: number): Promise<object | undefined> {
  const lenses = await client.sendRequest(CodeLensRequest.type,
    { textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri) } });
  return captureArgsAt(lenses ?? [], line);
}

/** The argument of the server's optimize action at `selection` of `document`, if any. */
export async function optimizeArgsAt(client: LanguageClient, document: vscode.TextDocument,
  selection: vscode.Range): Promise<object | undefined> {
  const actions = await client.sendRequest(CodeActionRequest.type, {
    textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri) },
    range: client.code2ProtocolConverter.asRange(selection),
    context: { diagnostics: [] },
  });
  for (const a of actions ?? []) {
    const command = Command.is(a) ? a : a.command;
    if (command?.command === "cudalens.optimize") {
      return (command.arguments ?? [])[0] as object | undefined;
    }
  }
  return undefined;
}
