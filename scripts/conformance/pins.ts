// The client releases `npm run conformance` runs: the one place their versions are pinned. A run may name other
// versions on its command line (`npm run conformance -- claude-code@2.1.332`); the matrix says which ran.

import { readFileSync } from 'node:fs';

export type ClientId = 'claude-code' | 'codex' | 'gemini-cli' | 'mcp-sdk' | 'mcp-inspector';

export interface ClientPin {
  id: ClientId;
  /** The npm package that installs the CLI. */
  package: string;
  version: string;
  /** The client is the project's own dependency (its lock file pins it): run from the project, nothing installed. */
  project?: true;
}

/** The version of the MCP SDK the project depends on (package-lock.json pins it). */
function projectSdkVersion(): string {
  const manifest = new URL('../../node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url);
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

/**
 * The releases issue 30 was reported against (their traffic is described in the research notes and recorded as
 * fixtures under test/fixtures/clients/). Move a pin when a new release is out, run the suite, commit the matrix.
 */
export const PINS: readonly ClientPin[] = [
  { id: 'claude-code', package: '@anthropic-ai/claude-code', version: '2.1.197' },
  { id: 'codex', package: '@openai/codex', version: '0.169.0' },
  { id: 'gemini-cli', package: '@google/gemini-cli', version: '0.61.0' },
  // MCP clients of the gateway's /mcp (issue 45): the SDK's own client (scripts/conformance/mcp-sdk-client.ts on the
  // project's dependency) and the MCP Inspector's CLI mode (`inspector --cli`; v2: the v1 package
  // @modelcontextprotocol/inspector-cli says it is deprecated).
  { id: 'mcp-sdk', package: '@modelcontextprotocol/sdk', version: projectSdkVersion(), project: true },
  { id: 'mcp-inspector', package: '@modelcontextprotocol/inspector', version: '2.12.0' },
];

/**
 * What runs the Open Responses compliance suite (open-responses.ts): the suite is TypeScript for bun and imports
 * zod; its README asks for zod 3.25.76. Both come from npm into the same cache as the CLIs (install-suite.ts).
 */
export const SUITE_RUNTIME = { bun: '1.4.5', zod: '3.25.76' } as const;
