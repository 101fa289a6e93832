/** Signatures of the binary types a translated upstream takes inline (WHATWG MIME Sniffing, §6 and §7.1). */
const SIGNATURES: ReadonlyArray<{ type: string; bytes: readonly number[] }> = [
  { type: 'application/pdf', bytes: [0x25, 0x50, 0x44, 0x46, 0x2d] }, // %PDF-
  { type: 'image/png', bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { type: 'image/jpeg', bytes: [0xff, 0xd8, 0xff] },
  { type: 'image/gif', bytes: [0x47, 0x49, 0x46, 0x38] }, // GIF8
];

const GENERIC = new Set(['application/octet-stream', 'binary/octet-stream', '']);
const TEXT_NAMES = /\.(txt|md|markdown|csv|tsv|json|jsonl|xml|html?|ya?ml|log|py|ts|js|c|h|java|go|rs|rb|sh|sql)$/i;

/**
 * What a file is, for an upstream that wants a media type with inline bytes: the bytes' own signature first (a
 * PDF, an image), else the type declared when it was stored (unless generic), else text when the bytes are valid
 * UTF-8 (or the name says text), else `application/octet-stream`.
 */
export function mediaTypeOf(bytes: Buffer, declared: string | null | undefined, filename: string): string {
  for (const signature of SIGNATURES) {
    if (signature.bytes.every((byte, i) => bytes[i] === byte)) return signature.type;
  }
  if (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP')
    return 'image/webp';
  const type = (declared ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (!GENERIC.has(type)) return type;
  if (TEXT_NAMES.test(filename) || isUtf8(bytes)) return 'text/plain';
  return 'application/octet-stream';
}

function isUtf8(bytes: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return !bytes.includes(0);
  } catch {
    return false;
  }
}
