import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { parseTraceParent } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import type { TracingConfig } from '../config/types.js';
import { isGatewayError } from '../errors/gateway-error.js';
import { ClientGoneError } from '../errors/client-gone.js';
import type { Usage } from '../providers/provider-contract.js';
import type { AttemptTrace, RequestTrace } from '../core/pipeline/trace-contract.js';
import type { RequestHead, RequestRecord } from '../request/request-record.js';
import type { ToolCallRecord } from '../core/mcp/tool-call-record.js';

interface WarnLog {
  warn(object: Record<string, unknown>, message: string): void;
}

/** One failed export is logged, then at most one a minute: a collector that is down must not flood the log. */
const EXPORT_WARN_INTERVAL_MS = 60_000;

/**
 * OpenTelemetry tracing (off by default; docs/tracing.md). A SERVER span per API request, continuing the caller's
 * W3C `traceparent` when it sent one, and a CLIENT span per upstream attempt (retries and fallbacks each get
 * their own), whose context goes upstream in `traceparent`. Spans leave in batches over OTLP/HTTP (JSON). Nothing
 * is registered globally: each app has its own provider, shut down (and flushed) with the app.
 */
export class GatewayTracing {
  private readonly provider: TracerProvider;
  private readonly tracer: Tracer;

  constructor(config: TracingConfig, version: string, environment: string, log: WarnLog) {
    const exporter = new WarningExporter(
      new OTLPTraceExporter({ url: config.endpoint, headers: config.headers, timeoutMillis: config.exportTimeoutMs }),
      log,
    );
    this.provider = new TracerProvider({
      resource: resourceFromAttributes({
        'service.name': config.serviceName,
        'service.version': version,
        'deployment.environment.name': environment,
      }),
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sampleRatio) }),
      spanProcessors: [
        new BatchSpanProcessor({
          exporter,
          scheduledDelayMillis: config.exportDelayMs,
          maxQueueSize: 4096,
          maxExportBatchSize: 512,
        }),
      ],
    });
    this.tracer = this.provider.getTracer('llm-gateway', version);
  }

  /** Opens the request's span, started when the request arrived (`arrivedAtMs`, epoch ms). */
  begin(head: RequestHead, arrivedAtMs: number): RequestTrace {
    const parent = remoteParent(head.traceparent);
    const span = this.tracer.startSpan(
      `${head.method} ${head.route ?? 'unknown'}`,
      {
        kind: SpanKind.SERVER,
        startTime: arrivedAtMs,
        attributes: {
          'http.request.method': head.method,
          'http.route': `/v1/?route=${head.route ?? 'unknown'}`,
          'llmgw.request_id': head.id,
        },
      },
      parent,
    );
    return new RequestSpan(this.tracer, span);
  }

  /** Closes the request's span when its answer was sent (opened here if the request failed before its handler). */
  end(record: RequestRecord): void {
    const requestTrace =
      (record.trace as RequestSpan | undefined) ??
      (this.begin(record, record.endedAtMs - record.latencyMs) as RequestSpan);
    const span = requestTrace.span;
    const { status } = record;
    const attributes: Attributes = {
      'http.response.status_code': status,
      'llmgw.caller': record.caller,
      'llmgw.attempts': record.attempts,
    };
    if (record.model !== undefined) attributes['gen_ai.request.model'] = record.model;
    if (record.upstream !== undefined) attributes['llmgw.upstream'] = record.upstream;
    if (record.replayed) attributes['llmgw.idempotent_replay'] = true;
    if (record.firstByteMs !== undefined) attributes['llmgw.ttfb_ms'] = record.firstByteMs;
    addUsage(attributes, record.usage);
    if (record.code !== undefined) {
      attributes['error.type'] = record.code;
      // A 4xx is the caller's mistake, not a failure of this span; a stream that failed after its 200 is one.
      if (status < 400 || status >= 500 || status === 499)
        span.setStatus({ code: SpanStatusCode.ERROR, message: record.code });
    }
    span.setAttributes(attributes);
    span.end();
  }

  /**
   * One MCP tool call's span, `mcp.tools/call`, made when the call ended (from its record: start and duration),
   * the child of `traceparent` (the request's span) when given. CLIENT: the gateway calls the upstream server.
   * Attributes follow OpenTelemetry's MCP conventions (`mcp.method.name`, `gen_ai.tool.name`) beside the gateway's
   * own; never the arguments or the result.
   */
  toolCall(record: ToolCallRecord, traceparent: string | undefined): void {
    const span = this.tracer.startSpan(
      'mcp.tools/call',
      {
        kind: SpanKind.CLIENT,
        startTime: record.timeMs,
        attributes: {
          'mcp.method.name': 'tools/call',
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': record.tool,
          'llmgw.mcp.server': record.server,
          'llmgw.mcp.tool': record.tool,
          'llmgw.mcp.outcome': record.outcome,
          'llmgw.mcp.call_id': record.callId,
          'llmgw.mcp.via': record.via,
          'llmgw.mcp.bytes_in': record.bytesIn,
          'llmgw.mcp.bytes_out': record.bytesOut,
          'llmgw.caller': record.caller,
          'llmgw.request_id': record.requestId,
        },
      },
      remoteParent(traceparent),
    );
    if (record.code !== null) {
      span.setAttribute('error.type', record.code);
      // A refusal is the caller's (a limit, a right); a tool's own error answer is the tool's: neither fails the span.
      if (record.outcome !== 'refused' && record.outcome !== 'tool_error')
        span.setStatus({ code: SpanStatusCode.ERROR, message: record.code });
    }
    span.end(record.timeMs + record.durationMs);
  }

  /** Sends what is still buffered; called when the app closes. */
  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }
}

class RequestSpan implements RequestTrace {
  private readonly context: Context;
  private attempts = 0;

  constructor(
    private readonly tracer: Tracer,
    readonly span: Span,
  ) {
    this.context = trace.setSpan(ROOT_CONTEXT, span);
  }

  attempt(upstream: string, provider: string, model: string, tryNumber: number): AttemptTrace {
    this.attempts += 1;
    const span = this.tracer.startSpan(
      `chat ${model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': provider,
          'gen_ai.request.model': model,
          'llmgw.upstream': upstream,
          'llmgw.attempt': this.attempts,
          'llmgw.try': tryNumber,
        },
      },
      this.context,
    );
    return new AttemptSpan(span);
  }

  skipped(upstream: string, reason: string): void {
    this.span.addEvent('upstream skipped', { 'llmgw.upstream': upstream, 'llmgw.reason': reason });
  }
}

class AttemptSpan implements AttemptTrace {
  readonly traceparent: string;
  private ended = false;

  constructor(private readonly span: Span) {
    const context = span.spanContext();
    this.traceparent = `00-${context.traceId}-${context.spanId}-${context.traceFlags.toString(16).padStart(2, '0')}`;
  }

  succeeded(usage: Usage | undefined): void {
    if (this.ended) return;
    this.ended = true;
    const attributes: Attributes = {};
    addUsage(attributes, usage);
    this.span.setAttributes(attributes);
    this.span.end();
  }

  failed(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    const code = isGatewayError(error)
      ? error.code
      : error instanceof ClientGoneError
        ? 'client_closed_request'
        : 'internal_error';
    const attributes: Attributes = { 'error.type': code };
    if (isGatewayError(error)) {
      const upstreamStatus = error.details.upstream_status;
      if (typeof upstreamStatus === 'number') attributes['http.response.status_code'] = upstreamStatus;
    }
    this.span.setAttributes(attributes);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: code });
    this.span.end();
  }
}

function addUsage(
  attributes: Attributes,
  usage: { prompt_tokens: number; completion_tokens: number; cost_usd?: number } | undefined,
): void {
  if (!usage) return;
  attributes['gen_ai.usage.input_tokens'] = usage.prompt_tokens;
  attributes['gen_ai.usage.output_tokens'] = usage.completion_tokens;
  if (usage.cost_usd !== undefined) attributes['llmgw.cost_usd'] = usage.cost_usd;
}

/** The caller's W3C trace context, when it sent a valid `traceparent`; otherwise the request starts a new trace. */
function remoteParent(header: string | undefined): Context {
  if (typeof header !== 'string') return ROOT_CONTEXT;
  const parsed = parseTraceParent(header);
  return parsed ? trace.setSpanContext(ROOT_CONTEXT, { ...parsed, isRemote: true }) : ROOT_CONTEXT;
}

/** Passes spans to the OTLP exporter and logs (rarely) when the collector refuses or cannot be reached. */
class WarningExporter implements SpanExporter {
  private lastWarnAt = -Infinity;

  constructor(
    private readonly inner: SpanExporter,
    private readonly log: WarnLog,
  ) {}

  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    this.inner.export(spans, (result) => {
      if (result.code !== 0 && Date.now() - this.lastWarnAt >= EXPORT_WARN_INTERVAL_MS) {
        this.lastWarnAt = Date.now();
        this.log.warn({ spans: spans.length, reason: result.error?.message }, 'trace export failed; spans dropped');
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}
