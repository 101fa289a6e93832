/**
 * A stand-in OpenTelemetry collector: a real node:http server taking OTLP/HTTP JSON exports at POST /v1/traces,
 * decoding them the way a collector does (resource + scope + span, attributes as typed values), and answering
 * with the status the test chose (200 `{}`, or an error to play a collector that is down).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind number: 2 SERVER, 3 CLIENT. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  statusMessage: string;
  startMs: number;
  endMs: number;
  events: Array<{ name: string; attributes: Record<string, string | number | boolean> }>;
  resource: Record<string, string | number | boolean>;
}

export interface OtlpCollector {
  url: string;
  spans: CollectedSpan[];
  /** Headers of every export request. */
  exports: IncomingHttpHeaders[];
  /** Status answered to the next exports (default 200). */
  status: number;
  close(): Promise<void>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type OtlpAttribute = { key: string; value: OtlpValue };

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
  }
  return out;
}

interface OtlpExport {
  resourceSpans: Array<{
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans: Array<{
      spans: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: OtlpAttribute[];
        status?: { code?: number; message?: string };
        startTimeUnixNano: string | number;
        endTimeUnixNano: string | number;
        events?: Array<{ name: string; attributes?: OtlpAttribute[] }>;
      }>;
    }>;
  }>;
}

export async function startOtlpCollector(): Promise<OtlpCollector> {
  const collector: OtlpCollector = { url: '', spans: [], exports: [], status: 200, close: async () => undefined };
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      if (
        req.method !== 'POST' ||
        req.url !== '/v1/traces' ||
        !String(req.headers['content-type']).startsWith('application/json')
      ) {
        res.writeHead(404).end();
        return;
      }
      collector.exports.push(req.headers);
      if (collector.status !== 200) {
        res
          .writeHead(collector.status, { 'content-type': 'application/json' })
          .end('{"code":14,"message":"unavailable"}');
        return;
      }
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as OtlpExport;
      for (const resourceSpans of body.resourceSpans) {
        const resource = attributesOf(resourceSpans.resource?.attributes);
        for (const scope of resourceSpans.scopeSpans) {
          for (const span of scope.spans) {
            collector.spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              name: span.name,
              kind: span.kind,
              attributes: attributesOf(span.attributes),
              statusCode: span.status?.code ?? 0,
              statusMessage: span.status?.message ?? '',
              startMs: Number(BigInt(span.startTimeUnixNano) / 1_000_000n),
              endMs: Number(BigInt(span.endTimeUnixNano) / 1_000_000n),
              events: (span.events ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
              resource,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  collector.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
  collector.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return collector;
}
