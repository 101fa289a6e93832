import { toolPatternProblem } from '../../config/tool-patterns.js';

/**
 * Which MCP tools a caller may see and call: a list of patterns `<server>/<tool glob>` (`github/*`, `fs/read_*`,
 * `any-server/search` as `*` then `/search`), `*` matching any run of characters (none included) and `?` one character, everything else itself.
 * No pattern: no tool (a key sees no tool until it is given some). The admin token's rights are `undefined`: every
 * tool. Compiled once per principal into one linear-time matcher (no regular expression built from caller text).
 */
export interface ToolRights {
  /** Whether `tool` of `server` may be listed and called. */
  allows(server: string, tool: string): boolean;
  /** Whether any tool of `server` may be (its endpoint and its tools' listing are skipped otherwise). */
  allowsServer(server: string): boolean;
}

export const ALL_TOOLS: ToolRights = { allows: () => true, allowsServer: () => true };
export const NO_TOOLS: ToolRights = { allows: () => false, allowsServer: () => false };

// The syntax lives with the config that reads patterns from the file; re-exported for everyone else.
export { MAX_TOOL_PATTERN_CHARS, MAX_TOOL_PATTERNS, toolPatternProblem } from '../../config/tool-patterns.js';

export function compileToolRights(patterns: readonly string[] | undefined): ToolRights {
  if (patterns === undefined) return ALL_TOOLS;
  const compiled = patterns
    .filter((pattern) => toolPatternProblem(pattern) === undefined)
    .map((pattern) => {
      const slash = pattern.indexOf('/');
      return { server: pattern.slice(0, slash), tool: pattern.slice(slash + 1) };
    });
  if (compiled.length === 0) return NO_TOOLS;
  return {
    allows: (server, tool) => compiled.some((p) => globMatch(p.server, server) && globMatch(p.tool, tool)),
    allowsServer: (server) => compiled.some((p) => globMatch(p.server, server)),
  };
}

/**
 * `*` any run, `?` one character: the classic two-pointer match with one backtrack point, O(glob × text) at worst
 * and linear in practice; both sides are bounded (a pattern 300 characters, a tool name 128).
 */
export function globMatch(glob: string, text: string): boolean {
  let g = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    const c = glob[g];
    if (c === '?' || (c !== undefined && c !== '*' && c === text[t])) {
      g++;
      t++;
    } else if (c === '*') {
      star = g++;
      mark = t;
    } else if (star !== -1) {
      g = star + 1;
      t = ++mark;
    } else return false;
  }
  while (glob[g] === '*') g++;
  return g === glob.length;
}
