/**
 * Where a JSON or YAML parse failed, without the parser's own message: both quote the text around the failure,
 * and a file the config names may hold a secret by mistake (a key file given as `price_catalog`, say), which
 * must reach neither the log nor the admin health view.
 */
export function parseFailureWhere(error: unknown): string {
  const linePos = (error as { linePos?: { line: number; col: number }[] }).linePos?.[0];
  if (linePos) return `at line ${linePos.line}, column ${linePos.col}`;
  const message = error instanceof Error ? error.message : '';
  const lineColumn = /line (\d+) column (\d+)/.exec(message);
  if (lineColumn) return `at line ${lineColumn[1]}, column ${lineColumn[2]}`;
  const position = /position (\d+)/.exec(message);
  if (position) return `at character ${position[1]}`;
  if (/end of (JSON|data) input/i.test(message)) return 'the text ends early';
  return 'where is not said: the parser quotes the text, which may hold a secret';
}
