import type * as Yaml from 'yaml';

/** A bound of ours refused the file: its message names what and the line, never the file's text. */
export class ConfigYamlRefusal extends Error {}

/** The deepest nesting of flow collections (`[...]`, `{...}`) a config file may have: a real one has a few. */
export const MAX_YAML_FLOW_DEPTH = 64;

/**
 * A YAML config file's value, with the work bounded by its length (docs/config.md, "Files the config names"):
 * - flow collections nested deeper than MAX_YAML_FLOW_DEPTH are refused after a lexing pass, before the parser
 *   builds them (a file of `[` took the parser seconds and gigabytes before it overflowed its stack);
 * - duplicate keys are found with one Set per mapping: the parser's own check compares each key with every
 *   earlier one of its mapping (quadratic: minutes for the keys of a few MB).
 * Throws a ConfigYamlRefusal whose message says what and on which line (never the key itself).
 */
export function parseConfigYaml(yaml: typeof Yaml, text: string): unknown {
  checkFlowDepth(yaml, text);
  const doc = yaml.parseDocument(text, { uniqueKeys: false });
  if (doc.errors.length > 0) throw doc.errors[0];
  checkUniqueKeys(yaml, doc, text);
  return doc.toJS();
}

function checkFlowDepth(yaml: typeof Yaml, text: string): void {
  let depth = 0;
  let offset = 0;
  // The lexer's tokens are the source cut in pieces: a flow collection's start is a token of its own (a `[`
  // inside a quoted or block scalar is part of that scalar's token).
  for (const token of new yaml.Lexer().lex(text)) {
    if (token === '[' || token === '{') {
      if (++depth > MAX_YAML_FLOW_DEPTH)
        throw new ConfigYamlRefusal(
          `collections nested deeper than ${MAX_YAML_FLOW_DEPTH} levels of [...] or {...} at line ${lineOf(text, offset)}`,
        );
    } else if (token === ']' || token === '}') depth--;
    offset += token.length;
  }
}

function checkUniqueKeys(yaml: typeof Yaml, doc: Yaml.Document.Parsed, text: string): void {
  yaml.visit(doc, {
    Map(_key, map) {
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        if (!yaml.isScalar(pair.key)) continue;
        const key = pair.key.value;
        if (seen.has(key))
          throw new ConfigYamlRefusal(
            `a key repeated in one mapping at line ${lineOf(text, pair.key.range?.[0] ?? 0)} (keys must be unique)`,
          );
        seen.add(key);
      }
    },
  });
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}
