/**
 * The server's lenses and code actions name its own commands; in VS Code, showing a diff,
 * accepting and rejecting go through the extension (a diff editor, saving the file, closing
 * the diff), so those command names are swapped for the extension's. Pure.
 */

export const CLIENT_COMMAND_OF: Readonly<Record<string, string>> = {
  "cudalens.showDiff": "cudalens.diff.show",
  "cudalens.apply": "cudalens.diff.accept",
  "cudalens.reject": "cudalens.diff.reject",
};

/** The command the editor runs for the server command `name` (itself unless swapped). */
export function clientCommand(name: string): string {
  return CLIENT_COMMAND_OF[name] ?? name;
}
