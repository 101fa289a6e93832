/** A multipart/form-data body (RFC 7578) split into its parts, bytes exact: for mock upstreams that take files. */
export interface FormPart {
  name: string;
  filename: string | undefined;
  contentType: string | undefined;
  data: Buffer;
}

/** The parts of `body` under the boundary of `contentType`; throws on a body that is not well formed. */
export function parseMultipart(body: Buffer, contentType: string | undefined): FormPart[] {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType ?? '');
  const mark = boundary?.[1] ?? boundary?.[2];
  if (mark === undefined) throw new Error('multipart: no boundary');
  const delimiter = Buffer.from(`--${mark}`);
  const parts: FormPart[] = [];
  let at = body.indexOf(delimiter);
  if (at !== 0) throw new Error('multipart: the body does not start with the boundary');
  for (;;) {
    at += delimiter.length;
    if (body.subarray(at, at + 2).toString() === '--') return parts;
    if (body.subarray(at, at + 2).toString() !== '\r\n') throw new Error('multipart: no CRLF after a boundary');
    const headEnd = body.indexOf('\r\n\r\n', at);
    if (headEnd === -1) throw new Error('multipart: a part without headers end');
    const head = body.subarray(at + 2, headEnd).toString('utf8');
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), headEnd + 4);
    if (next === -1) throw new Error('multipart: a part without its closing boundary');
    const disposition = /content-disposition:([^\r\n]*)/i.exec(head)?.[1] ?? '';
    parts.push({
      name: /\bname="([^"]*)"/.exec(disposition)?.[1] ?? '',
      filename: /\bfilename="([^"]*)"/.exec(disposition)?.[1],
      contentType: /content-type:\s*([^\r\n]*)/i.exec(head)?.[1]?.trim(),
      data: Buffer.from(body.subarray(headEnd + 4, next)),
    });
    at = next + 2;
  }
}
