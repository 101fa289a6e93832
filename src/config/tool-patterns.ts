/**
 * The syntax of MCP tool-right patterns, `<server>/<tool glob>` (`github/*`, `fs/read_*`): checked where they come in
 * (a key's `mcp_tools`, `auth.basic_users[].mcp_tools`, `mcp.oauth_tools`). Here, below the config loader, so the file
 * is checked when it is read; core/mcp/tool-rights.ts compiles the patterns and re-exports these.
 */

/** The most patterns one principal may hold, and a pattern's longest text. */
export const MAX_TOOL_PATTERNS = 1024;
export const MAX_TOOL_PATTERN_CHARS = 300;

/** Why `pattern` is not one (undefined: it is): what a key's create, a config and the CLI report. */
export function toolPatternProblem(pattern: string): string | undefined {
  if (pattern.length === 0 || pattern.length > MAX_TOOL_PATTERN_CHARS)
    return `must be 1 to ${MAX_TOOL_PATTERN_CHARS} characters`;
  const slash = pattern.indexOf('/');
  if (slash <= 0 || slash === pattern.length - 1)
    return 'must be <server>/<tool glob>, as github/* or fs/read_* (a server name or glob, a slash, a tool glob)';
  if (pattern.indexOf('/', slash + 1) !== -1) return 'holds more than one slash (<server>/<tool glob>)';
  if (/[\s\u0000-\u001f]/.test(pattern)) return 'holds a space or a control character';
  return undefined;
}

/** One problem per bad pattern of `patterns`, each naming `<where>[i]`, and one when there are too many. */
export function toolPatternsProblems(patterns: readonly string[], where: string): string[] {
  const problems: string[] = [];
  if (patterns.length > MAX_TOOL_PATTERNS) problems.push(`${where}: at most ${MAX_TOOL_PATTERNS} patterns`);
  patterns.forEach((pattern, i) => {
    const problem = toolPatternProblem(pattern);
    if (problem) problems.push(`${where}[${i}]: "${pattern.slice(0, 60)}" ${problem}`);
  });
  return problems;
}
