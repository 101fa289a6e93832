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

const MAX_PROBLEMS = 50;

/**
 * Ajv's errors in words a caller can act on: `/messages/0/role` becomes `messages[0].role`, a missing property
 * is named as the field itself, and the bookkeeping errors of `if`/`then` are dropped.
 */
export function describeViolations(violations: readonly SchemaViolation[], root = 'body'): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const seen = new Set<string>();
  for (const violation of violations) {
    if (violation.keyword === 'if') continue;
    let path = pointerToField(violation.instancePath);
    let problem = violation.message ?? 'is invalid';
    if (violation.keyword === 'required') {
      path = joinField(path, String(violation.params.missingProperty));
      problem = 'is required';
    } else if (violation.keyword === 'additionalProperties') {
      path = joinField(path, String(violation.params.additionalProperty));
      problem = 'is not allowed here';
    } else if (violation.keyword === 'type') {
      problem = `must be ${String(violation.params.type).split(',').join(' or ')}`;
    }
    const field = path || root;
    const key = `${field}\u0000${problem}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const entry: FieldProblem = { field, problem };
    if (violation.keyword === 'enum' && Array.isArray(violation.params.allowedValues)) {
      entry.allowed = violation.params.allowedValues;
    }
    problems.push(entry);
    if (problems.length >= MAX_PROBLEMS) break;
  }
  return problems;
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
