/** The subset of an Ajv error that Fastify attaches to `error.validation`. */
export interface SchemaViolation {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/** One entry of `details.errors` for a 400: which field, what is wrong, and what would be accepted. */
export interface FieldProblem {
  field: string;
  problem: string;
  allowed?: unknown[];
}

/** A 400 names at most this many problems (docs/errors.md); the rest are counted in `details.errors_omitted`. */
export const MAX_PROBLEMS = 50;

/** `details` of a `validation_failed`: the first MAX_PROBLEMS problems, and how many more there were. */
export interface ProblemDetails {
  [key: string]: unknown;
  errors: FieldProblem[];
  errors_omitted?: number;
}

/**
 * Collects the problems of one request, keeping the first MAX_PROBLEMS and counting the rest: a body of 40,000
 * bad messages gets a short answer that says how much was left out, not a 3 MB one.
 */
export class ProblemList {
  private readonly kept: FieldProblem[] = [];
  private omitted = 0;

  add(problem: FieldProblem): void {
    if (this.kept.length < MAX_PROBLEMS) this.kept.push(problem);
    else this.omitted++;
  }

  get empty(): boolean {
    return this.kept.length === 0;
  }

  /** Whether MAX_PROBLEMS are kept: what comes next is only counted. */
  get full(): boolean {
    return this.kept.length >= MAX_PROBLEMS;
  }

  /** Counts one more problem without naming it. */
  omit(): void {
    this.omitted++;
  }

  details(): ProblemDetails {
    return this.omitted > 0 ? { errors: this.kept, errors_omitted: this.omitted } : { errors: this.kept };
  }
}

/**
 * Ajv's errors in words a caller can act on: `/messages/0/role` becomes `messages[0].role`, a missing property
 * is named as the field itself, and the bookkeeping errors of `if`/`then` are dropped. Past the first
 * MAX_PROBLEMS, a problem is only counted (no field name is built for it): a few thousand cost a few milliseconds.
 */
export function describeViolations(violations: readonly SchemaViolation[], root = 'body'): ProblemDetails {
  const problems = new ProblemList();
  const seen = new Set<string>();
  for (const violation of violations) {
    if (violation.keyword === 'if') continue;
    let name: string | undefined;
    let problem = violation.message ?? 'is invalid';
    if (violation.keyword === 'required') {
      name = String(violation.params.missingProperty);
      problem = 'is required';
    } else if (violation.keyword === 'additionalProperties') {
      name = String(violation.params.additionalProperty);
      problem = 'is not allowed here';
    } else if (violation.keyword === 'type') {
      problem = `must be ${String(violation.params.type).split(',').join(' or ')}`;
    }
    const key = `${violation.instancePath}\u0000${name ?? ''}\u0000${problem}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (problems.full) {
      problems.omit();
      continue;
    }
    const path = pointerToField(violation.instancePath);
    const entry: FieldProblem = { field: (name === undefined ? path : joinField(path, name)) || root, problem };
    if (violation.keyword === 'enum' && Array.isArray(violation.params.allowedValues)) {
      entry.allowed = violation.params.allowedValues;
    }
    problems.add(entry);
  }
  return problems.details();
}

function pointerToField(pointer: string): string {
  if (pointer === '') return '';
  let out = '';
  for (const raw of pointer.slice(1).split('/')) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out = /^\d+$/.test(part) ? `${out}[${part}]` : joinField(out, part);
  }
  return out;
}

function joinField(base: string, name: string): string {
  return base === '' ? name : `${base}.${name}`;
}
