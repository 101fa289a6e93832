import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import ajvFormats from 'ajv-formats';
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import { boundedView, viewPlan, type ViewPlan } from './schema-view.js';
import { describeViolations, type ProblemDetails } from './validation-details.js';

/** No type coercion (a string "0.5" is not a number), unknown fields passed through, nothing filled in. */
const AJV_OPTIONS: Options = {
  coerceTypes: false,
  allowUnionTypes: true,
  removeAdditional: false,
  useDefaults: false,
  addUsedSchema: false,
};

function ajv(allErrors: boolean): Ajv {
  const instance = new Ajv({ ...AJV_OPTIONS, allErrors });
  ajvFormats.default(instance); // CommonJS: the plugin is both the module and its `default`
  return instance;
}

/**
 * The validator compiler of every route schema (Fastify's own, with allErrors, cost a hostile body of 500,000 bad
 * items 0.8 to 2.4 s and hundreds of MB: one error object per item, then a message joining them all).
 *
 * A part is first checked by Ajv stopping at its first problem, which costs what it reads up to there (and is all a
 * valid part ever costs). Only a part that fails is checked again for all its problems, on a bounded view of it
 * (schema-view.ts): the whole part when it has at most VIEW_NODES values (the answer is then exact: every problem, the
 * first 50 named), otherwise its first VIEW_NODES values and what the schema needs of the rest, with
 * `errors_truncated: true`. The first problem found is always named, wherever it is.
 *
 * A compiled validator answers `true`, or `{ error }` with the `validation_failed` to send (Fastify's contract for
 * a custom compiler; `assertValid` below for a schema checked in a handler).
 */
export function boundedValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const firstProblem = ajv(false);
  let everyProblem: Ajv | undefined; // made on the first part that fails
  return ({ schema, httpPart }) => {
    const quick = firstProblem.compile(schema as object);
    let full: ValidateFunction | undefined;
    let plan: ViewPlan | undefined;
    const root = httpPart ?? 'body';
    return (data: unknown) => {
      if (quick(data)) return true;
      const first = quick.errors ?? [];
      full ??= (everyProblem ??= ajv(true)).compile(schema as object);
      plan ??= viewPlan(schema);
      return { error: new GatewayError('validation_failed', problemsOf(data, first, full, plan, root)) };
    };
  };
}

function problemsOf(
  data: unknown,
  first: ErrorObject[],
  full: ValidateFunction,
  plan: ViewPlan,
  root: string,
): ProblemDetails {
  const view = boundedView(data, plan);
  if (!view.clipped) {
    full(data);
    return describeViolations(full.errors ?? first, root);
  }
  if (plan.safe) full(view.value);
  const found = plan.safe ? [...first, ...(full.errors ?? [])] : first;
  return { ...describeViolations(found, root), errors_truncated: true };
}

/** Checks `value` with a validator from `request.compileValidationSchema`; throws the `validation_failed` to send. */
export function assertValid(validate: ReturnType<FastifySchemaCompiler<unknown>>, value: unknown): void {
  const result = validate(value);
  if (result === true) return;
  if (typeof result === 'object' && result !== null && 'error' in result && result.error instanceof Error)
    throw result.error;
  throw new GatewayError(
    'validation_failed',
    describeViolations((validate.errors ?? []) as FastifySchemaValidationError[]),
  );
}
