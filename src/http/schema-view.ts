/**
 * A bounded view of a request part, for naming its problems: naming every problem of a body of 500,000 bad items
 * made Ajv (with allErrors) allocate one error object per item, 0.8 to 2.4 s and hundreds of MB a request. The view
 * keeps the body's first VIEW_NODES values in document order; past them, an array keeps only as many items as any
 * `minItems` of the schema asks for, and an object only the keys the schema names (and as many others as any
 * `minProperties` asks for). Validating the view then costs at most a few thousand values.
 *
 * A clipped view never shows a problem the whole body does not have, for a schema whose checks can only pass more
 * often on less data (`viewPlan` says whether a schema is one: every route schema of the gateway is, and
 * test/http/validation-bounds.test.ts checks it): no `not`, `oneOf`, `contains`, dependencies, `$ref` or unevaluated*,
 * `enum`/`const` of scalars only, and no `if` that looks at sizes or items. Problems past the view may be missed:
 * the answer says so (`errors_truncated`).
 */

/** How many values of a body the view keeps before it starts clipping. */
export const VIEW_NODES = 1024;
/** A schema that asks for more items or keys than this (minItems, minProperties) is never viewed clipped. */
const MAX_KEPT = 64;

export interface ViewPlan {
  /** Whether a clipped view's problems are all problems of the whole (see the file comment). */
  safe: boolean;
  /** Every property name the schema mentions (`properties`, `required`): always kept. */
  named: Set<string>;
  /** The most items any array of the schema must have (`minItems`). */
  keepItems: number;
  /** The most keys any object of the schema must have (`minProperties`). */
  keepKeys: number;
}

const UNSAFE = new Set([
  'not',
  'oneOf',
  'contains',
  'minContains',
  'maxContains',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  'unevaluatedItems',
  'unevaluatedProperties',
  '$ref',
  '$dynamicRef',
  '$recursiveRef',
]);
/** What an `if` must not look at: a clipped array or object could turn its answer around. */
const SIZE_KEYWORDS = new Set([
  'items',
  'prefixItems',
  'additionalItems',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'additionalProperties',
  'patternProperties',
  'propertyNames',
]);
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const SCHEMA_LISTS = ['anyOf', 'allOf', 'oneOf', 'prefixItems'];
const SUBSCHEMAS = [
  'additionalProperties',
  'items',
  'additionalItems',
  'contains',
  'not',
  'then',
  'else',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
];

/** What clipping a value for `schema` may keep and drop, and whether it is safe at all. Computed once per schema. */
export function viewPlan(schema: unknown): ViewPlan {
  const plan: ViewPlan = { safe: true, named: new Set(), keepItems: 0, keepKeys: 0 };
  walkSchema(schema, plan, false);
  if (plan.keepItems > MAX_KEPT || plan.keepKeys > MAX_KEPT) plan.safe = false;
  return plan;
}

function walkSchema(schema: unknown, plan: ViewPlan, inIf: boolean): void {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return;
  const s = schema as Record<string, unknown>;
  for (const keyword of Object.keys(s)) {
    if (UNSAFE.has(keyword) || (inIf && SIZE_KEYWORDS.has(keyword))) plan.safe = false;
  }
  for (const values of [s.enum, s.const === undefined ? undefined : [s.const]]) {
    if (Array.isArray(values) && values.some((v) => typeof v === 'object' && v !== null)) plan.safe = false;
  }
  if (typeof s.minItems === 'number') plan.keepItems = Math.max(plan.keepItems, s.minItems);
  if (typeof s.minProperties === 'number') plan.keepKeys = Math.max(plan.keepKeys, s.minProperties);
  if (Array.isArray(s.required)) for (const name of s.required) plan.named.add(String(name));
  if (typeof s.properties === 'object' && s.properties !== null)
    for (const name of Object.keys(s.properties)) plan.named.add(name);
  for (const map of SCHEMA_MAPS) {
    const inner = s[map];
    if (typeof inner === 'object' && inner !== null)
      for (const sub of Object.values(inner)) walkSchema(sub, plan, inIf);
  }
  for (const list of [...SCHEMA_LISTS, 'items']) {
    const inner = s[list];
    if (Array.isArray(inner)) for (const sub of inner) walkSchema(sub, plan, inIf);
  }
  for (const keyword of SUBSCHEMAS) walkSchema(s[keyword], plan, inIf);
  walkSchema(s.if, plan, true);
}

interface Walk {
  left: number;
  clipped: boolean;
}

/** The view of `value` (the value itself when nothing had to be clipped) and whether anything was. */
export function boundedView(value: unknown, plan: ViewPlan): { value: unknown; clipped: boolean } {
  const walk: Walk = { left: VIEW_NODES, clipped: false };
  const viewed = viewOf(value, plan, walk);
  return { value: viewed, clipped: walk.clipped };
}

function viewOf(value: unknown, plan: ViewPlan, walk: Walk): unknown {
  walk.left--;
  if (typeof value !== 'object' || value === null) return value;
  return Array.isArray(value)
    ? viewOfArray(value, plan, walk)
    : viewOfObject(value as Record<string, unknown>, plan, walk);
}

function viewOfArray(items: unknown[], plan: ViewPlan, walk: Walk): unknown[] {
  let copy: unknown[] | undefined;
  let i = 0;
  for (; i < items.length && (walk.left > 0 || i < plan.keepItems); i++) {
    const item = items[i];
    const viewed = viewOf(item, plan, walk);
    if (viewed !== item) copy ??= items.slice(0, i);
    copy?.push(viewed);
  }
  if (i === items.length) return copy ?? items;
  walk.clipped = true;
  return copy ?? items.slice(0, i);
}

function viewOfObject(object: Record<string, unknown>, plan: ViewPlan, walk: Walk): Record<string, unknown> {
  const keys = Object.keys(object);
  let kept: Array<[string, unknown]> | undefined;
  let others = 0;
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k] as string;
    const named = plan.named.has(key);
    if (!named && walk.left <= 0 && others >= plan.keepKeys) {
      // From here on only the keys the schema names are kept: looked up, rather than walking the rest.
      walk.clipped = true;
      kept ??= keys.slice(0, k).map((earlier) => [earlier, object[earlier]]);
      const have = new Set(kept.map(([earlier]) => earlier));
      for (const name of plan.named) {
        if (!have.has(name) && Object.hasOwn(object, name)) kept.push([name, viewOf(object[name], plan, walk)]);
      }
      break;
    }
    if (!named) others++;
    const item = object[key];
    const viewed = viewOf(item, plan, walk);
    if (viewed !== item) kept ??= keys.slice(0, k).map((earlier) => [earlier, object[earlier]]);
    kept?.push([key, viewed]);
  }
  // fromEntries defines each key as an own property: a key "__proto__" stays a key.
  return kept ? Object.fromEntries(kept) : object;
}
