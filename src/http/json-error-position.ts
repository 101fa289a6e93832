import { MAX_JSON_DEPTH } from './json-shape.js';

/**
 * Finds where a JSON text first breaks RFC 8259, for the 400 the caller gets. Runs only after JSON.parse has
 * already failed (never on the hot path). V8's own message has no position on Node 20 and quotes the input,
 * which may hold a secret; this scanner reports the position and what was expected, and quotes nothing.
 */
export interface JsonSyntaxProblem {
  position: number;
  line: number;
  column: number;
  reason: string;
}

class Stop extends Error {
  constructor(
    readonly at: number,
    readonly reason: string,
  ) {
    super(reason);
  }
}

export function locateJsonError(text: string, maxDepth = MAX_JSON_DEPTH): JsonSyntaxProblem {
  let i = 0;
  // The scanner recurses once per level: it stops at the depth the gateway refuses anyway (json-shape.ts), so
  // a broken body a million brackets deep is a 400, not a stack overflow.
  let depth = 0;
  const fail = (reason: string): never => {
    throw new Stop(i, reason);
  };
  const skipSpace = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const expectChar = (c: string, what: string) => {
    skipSpace();
    if (text[i] !== c) fail(i >= text.length ? `unexpected end of input, expected ${what}` : `expected ${what}`);
    i++;
  };
  const string = () => {
    i++; // opening quote
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x22) return void i++;
      if (c < 0x20) fail('control character inside a string (escape it)');
      if (c === 0x5c) {
        i++;
        const e = text[i];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) fail('invalid \\u escape');
          i += 5;
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(e)) fail('invalid escape sequence');
      }
      i++;
    }
    fail('unterminated string');
  };
  const value = (): void => {
    skipSpace();
    const c = text[i];
    if (c === undefined) return fail('unexpected end of input, expected a value');
    if ((c === '{' || c === '[') && depth >= maxDepth) fail(`nested deeper than ${maxDepth} levels`);
    depth++;
    try {
      nested(c);
    } finally {
      depth--;
    }
  };
  const nested = (c: string): void => {
    if (c === '{') {
      i++;
      skipSpace();
      if (text[i] === '}') return void i++;
      for (;;) {
        skipSpace();
        if (text[i] !== '"') fail('expected a property name in double quotes');
        string();
        expectChar(':', '":"');
        value();
        skipSpace();
        if (text[i] === ',') {
          i++;
          continue;
        }
        return expectChar('}', '"," or "}"');
      }
    }
    if (c === '[') {
      i++;
      skipSpace();
      if (text[i] === ']') return void i++;
      for (;;) {
        value();
        skipSpace();
        if (text[i] === ',') {
          i++;
          continue;
        }
        return expectChar(']', '"," or "]"');
      }
    }
    if (c === '"') return string();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400));
    if (!literal) fail('expected a value (object, array, string, number, true, false or null)');
    i += (literal as RegExpExecArray)[0].length;
  };
  try {
    value();
    skipSpace();
    if (i < text.length) fail('unexpected text after the JSON value');
    return at(text, text.length, 'invalid JSON');
  } catch (error) {
    if (error instanceof Stop) return at(text, error.at, error.reason);
    throw error;
  }
}

function at(text: string, position: number, reason: string): JsonSyntaxProblem {
  return { position, ...lineAndColumn(text, position), reason };
}

/** 1-based line and column of a position in a text. */
export function lineAndColumn(text: string, position: number): { line: number; column: number } {
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  return { line, column: position - before.lastIndexOf('\n') };
}
