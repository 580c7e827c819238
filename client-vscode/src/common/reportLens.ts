/**
 * The "Show kernel report" lens: the server's lenses do not include it (other editors cannot
 * show a webview), so the extension adds one beside each kernel's "Optimize again" lens, the
 * lens a kernel has once a run of it is stored. Pure.
 */

export const SHOW_REPORT = "cudalens.report.show";
export const REPORT_TITLE = "Show kernel report";

/** A lens's command as the server sent it: title, name and arguments. */
export interface LensCommand { title: string; command: string; arguments?: unknown[] }

/** The kernel a report is about, as the server's commands name it. */
export interface ReportArgs { uri: string; kernel: string }

/** The argument of the report lens for `lens`, or undefined when `lens` is not the
 * "Optimize again" lens of a kernel (no stored run, or another lens). */
export function reportArgsOf(lens: LensCommand | undefined): ReportArgs | undefined {
  if (!lens || lens.command !== "cudalens.optimize" || !lens.title.startsWith("Optimize again")) {
    return undefined;
  }
  const a = (lens.arguments ?? [])[0] as Record<string, unknown> | undefined;
  if (!a || typeof a.uri !== "string" || typeof a.kernel !== "string") {
    return undefined;
  }
  return { uri: a.uri, kernel: a.kernel };
}

/** Checks a command argument: an object with string `uri` and `kernel`.
 * @throws Error naming what was expected and found */
export function parseReportArgs(arg: unknown): ReportArgs {
  const a = arg as Record<string, unknown> | undefined;
  if (!a || typeof a !== "object" || typeof a.uri !== "string" || typeof a.kernel !== "string") {
    throw new Error(`${SHOW_REPORT}: expected an object with string uri and kernel, found ${JSON.stringify(arg)}`);
  }
  return { uri: a.uri, kernel: a.kernel };
}

/** The key of a report panel: one panel per kernel of a file. */
export function panelKey(args: ReportArgs): string {
  return `${args.uri}#${args.kernel}`;
}
