import { GatewayError } from '../errors/gateway-error.js';
import type { ProblemList } from '../http/validation-details.js';

/** The response header that names what a translated request left out (docs/messages.md, docs/responses.md). */
export const DROPPED_FIELDS_HEADER = 'x-gateway-dropped-fields';

/** At most this many names are kept (a hostile body may hold thousands of droppable fields). */
const MAX_NOTED = 32;

/**
 * What a surface's translation did with the caller's fields that the target cannot take as they are. Agent clients
 * send fields months before any schema lists them (Claude Code's `context_management`, Codex's `client_metadata`):
 * a field that only tags or hints is dropped and named (never silently: the caller sees X-Gateway-Dropped-Fields,
 * the operator the access line); a model set to `translation: strict` refuses it instead. A field that would change
 * the meaning of the answer and has no mapping is refused either way (the surface throws
 * `capability_not_supported` itself). One per call; nothing is allocated until something is dropped.
 */
export class TranslationNotes {
  private names: string[] | undefined;

  constructor(
    /** The model's `translation` setting. */
    readonly mode: 'tolerant' | 'strict',
  ) {}

  /**
   * Notes that `field` (a path in the caller's body, such as `client_metadata` or `tools[3]`) was left out because
   * `problem`; in strict mode, refuses the request instead.
   */
  drop(field: string, problem: string): void {
    if (this.mode === 'strict') {
      throw new GatewayError('capability_not_supported', {
        field,
        problem: `${problem}; this model's translation is strict, so it is refused instead of dropped`,
      });
    }
    this.names ??= [];
    if (this.names.length < MAX_NOTED && !this.names.includes(field)) this.names.push(field);
  }

  /** The fields dropped so far, in the order they were met (undefined when none). */
  get dropped(): readonly string[] | undefined {
    return this.names;
  }
}

/** How a surface's translation treats the top-level fields of a request (`unmappedFields`). */
export interface TopLevelFields {
  /** The fields it maps (not looked at here). */
  readonly mapped: ReadonlySet<string>;
  /** The fields that only tag or hint, each with why it is left out. */
  readonly dropped: Readonly<Record<string, string>>;
  /** Why any other field is refused. */
  readonly refusal: (field: string) => string;
}

/** Each top-level field of `body` the translation does not map: dropped (named) when it only tags or hints, else refused. */
export function unmappedFields(
  body: object,
  fields: TopLevelFields,
  context: { readonly problems: ProblemList; readonly notes: TranslationNotes | undefined },
): void {
  for (const [field, value] of Object.entries(body)) {
    if (fields.mapped.has(field) || value === null || value === undefined) continue;
    const dropped = Object.hasOwn(fields.dropped, field) ? fields.dropped[field] : undefined;
    if (dropped !== undefined) context.notes?.drop(field, dropped);
    else context.problems.add({ field: field.slice(0, 64), problem: fields.refusal(field) });
  }
}
