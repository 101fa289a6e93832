import { isJsonObject, type Received } from './received.js';
import type { GeminiFinishReason, GeminiThinkingConfig, GeminiThinkingLevel } from './gemini.js';

/**
 * Gemini's values and chat's, both ways (pure): finish reasons, thinking (levels and budgets as a reasoning effort),
 * and OpenAPI Schema (Gemini's upper-case types) as JSON Schema.
 */

/** Gemini's `finishReason` as a chat finish reason (null: not finished); a turn that called a tool is `tool_calls`. */
export function chatFinishReasonOf(reason: unknown, calledTools: boolean): string | null {
  if (reason === undefined || reason === null || reason === 'FINISH_REASON_UNSPECIFIED') return null;
  if (calledTools) return 'tool_calls';
  switch (reason) {
    case 'STOP':
      return 'stop';
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'RECITATION':
    case 'BLOCKLIST':
    case 'PROHIBITED_CONTENT':
    case 'SPII':
    case 'IMAGE_SAFETY':
      return 'content_filter';
    default:
      return 'stop';
  }
}

/** A chat finish reason as Gemini's. Gemini has no reason for a tool call: a turn that calls one ends with STOP. */
export function geminiFinishReasonOf(reason: string | null | undefined): GeminiFinishReason {
  switch (reason) {
    case undefined:
    case null:
    case 'stop':
    case 'tool_calls':
    case 'function_call':
      return 'STOP';
    case 'length':
      return 'MAX_TOKENS';
    case 'content_filter':
      return 'SAFETY';
    default:
      return 'OTHER';
  }
}

/** Thinking levels by reasoning effort, for Gemini 3 and later (`none` is the lowest: thinking cannot be turned off there). */
export const THINKING_LEVEL_BY_EFFORT: Readonly<Record<string, GeminiThinkingLevel>> = {
  none: 'MINIMAL',
  minimal: 'MINIMAL',
  low: 'LOW',
  medium: 'MEDIUM',
  high: 'HIGH',
  xhigh: 'HIGH',
  max: 'HIGH',
};

/** Thinking budgets by reasoning effort, for Gemini 2.5 (0 turns thinking off on Flash). */
export const THINKING_BUDGET_BY_EFFORT: Readonly<Record<string, number>> = {
  none: 0,
  minimal: 512,
  low: 1024,
  medium: 8192,
  high: 16_384,
  xhigh: 24_576,
  max: 24_576,
};

const EFFORT_BY_LEVEL: Readonly<Record<string, string>> = {
  MINIMAL: 'minimal',
  LOW: 'low',
  MEDIUM: 'medium',
  HIGH: 'high',
};

/**
 * A `thinkingConfig` as a chat `reasoning_effort` (the inverse of the tables above), or undefined for the target's
 * own default: a level is the effort of its name; a budget of 0 is `none`, -1 (the model decides) is no effort, and
 * any other budget the lowest effort whose budget covers it, up to `high` (the highest effort every upstream takes).
 * A level wins over a budget (Gemini refuses both).
 */
export function effortOfThinking(config: Received<GeminiThinkingConfig>): string | undefined {
  if (typeof config.thinkingLevel === 'string' && Object.hasOwn(EFFORT_BY_LEVEL, config.thinkingLevel))
    return EFFORT_BY_LEVEL[config.thinkingLevel];
  const budget = config.thinkingBudget;
  if (typeof budget !== 'number' || budget < 0) return undefined;
  if (budget === 0) return 'none';
  for (const effort of ['minimal', 'low', 'medium'] as const)
    if (budget <= (THINKING_BUDGET_BY_EFFORT[effort] as number)) return effort;
  return 'high';
}

/** How deep `jsonSchemaOf` follows a schema: past it, the schema is refused (a hostile body may nest thousands deep). */
export const MAX_SCHEMA_DEPTH = 64;

/** Keys whose value is a map of schemas, a list of schemas, or one schema (or a tuple list): followed. */
const SCHEMA_MAPS: ReadonlySet<string> = new Set([
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
]);
const SCHEMA_LISTS: ReadonlySet<string> = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
const SCHEMA_ONE: ReadonlySet<string> = new Set([
  'items',
  'additionalItems',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
]);
/** OpenAPI Schema's int64 counts, which the protos' JSON writes as strings. */
const COUNTS: ReadonlySet<string> = new Set([
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'minProperties',
  'maxProperties',
]);

class TooDeep extends Error {}

/**
 * An OpenAPI Schema (Gemini's `parameters`, `responseSchema`; Gemini CLI's `responseJsonSchema`) as JSON Schema
 * (pure): every `type` lower-cased (`"OBJECT"` → `"object"`; `TYPE_UNSPECIFIED` left out), `nullable: true` as a
 * `"null"` type beside the type (`nullable: false` left out), counts written as strings (`"5"`) as numbers; every other keyword as it is. Nested
 * schemas are followed (properties, items, anyOf...), data is not (`enum`, `default`, `example`, a property named
 * `type`). A schema already in JSON Schema comes out the same. Undefined when nested deeper than `maxDepth`.
 */
export function jsonSchemaOf(schema: unknown, maxDepth = MAX_SCHEMA_DEPTH): unknown {
  try {
    return lowerSchema(schema, 0, maxDepth);
  } catch (error) {
    if (error instanceof TooDeep) return undefined;
    throw error;
  }
}

function lowerSchema(node: unknown, depth: number, maxDepth: number): unknown {
  if (!isJsonObject(node)) return node; // `true`/`false` schemas, or not a schema: as it is
  if (depth >= maxDepth) throw new TooDeep();
  const next = (value: unknown): unknown => lowerSchema(value, depth + 1, maxDepth);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'type') {
      const type = lowerType(value);
      if (type !== undefined) out.type = type;
    } else if (key === 'nullable' && typeof value === 'boolean') continue;
    else if (COUNTS.has(key) && typeof value === 'string' && /^\d{1,15}$/.test(value)) out[key] = Number(value);
    else if (SCHEMA_MAPS.has(key) && isJsonObject(value))
      out[key] = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, next(schema)]));
    else if ((SCHEMA_LISTS.has(key) || SCHEMA_ONE.has(key)) && Array.isArray(value)) out[key] = value.map(next);
    else if (SCHEMA_ONE.has(key)) out[key] = next(value);
    else out[key] = value;
  }
  if (node.nullable === true) {
    if (out.type === undefined)
      out.nullable = true; // nothing to add "null" to: kept as it was
    else {
      const types = Array.isArray(out.type) ? (out.type as unknown[]) : [out.type];
      out.type = types.includes('null') ? types : [...types, 'null'];
    }
  }
  return out;
}

function lowerType(type: unknown): unknown {
  if (typeof type === 'string') return type === 'TYPE_UNSPECIFIED' ? undefined : type.toLowerCase();
  if (Array.isArray(type)) return type.map((t: unknown) => (typeof t === 'string' ? t.toLowerCase() : t));
  return type;
}
