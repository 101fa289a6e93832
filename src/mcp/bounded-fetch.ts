/**
 * The fetch an MCP server's HTTP transport uses (Node's own): a response's JSON body, or one event of its
 * server-sent stream, larger than `maxBytes` ends the response with an error, so a hostile or broken server that
 * sends an endless body or an endless event costs bounded memory. A stream that goes on for hours in events of
 * bounded size (the GET stream of notifications) is left alone: only the bytes since the last event's end count.
 */
export function boundedFetch(maxBytes: number): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    const eventStream = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    let pending = 0;
    let afterNewline = false;
    const bound = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (!eventStream) pending += chunk.byteLength;
        else
          for (let i = 0; i < chunk.byteLength; i++) {
            const byte = chunk[i] as number;
            // An event ends at a blank line: two line feeds with nothing but carriage returns between them.
            pending = byte === 0x0a && afterNewline ? 0 : pending + 1;
            if (byte !== 0x0d) afterNewline = byte === 0x0a;
          }
        if (pending > maxBytes) {
          controller.error(new Error(`the server sent a message larger than ${maxBytes} bytes`));
          return;
        }
        controller.enqueue(chunk);
      },
    });
    return new Response(response.body.pipeThrough(bound), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
