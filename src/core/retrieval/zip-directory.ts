/** One entry of a zip archive's central directory, as the archive declares it (before anything is inflated). */
export interface ZipEntry {
  name: string;
  compressedSize: number;
  uncompressedSize: number;
}

const END_SIGNATURE = 0x06054b50;
const ENTRY_SIGNATURE = 0x02014b50;
/** The end record is 22 bytes plus a comment of at most 65,535 bytes. */
const MAX_END_SEARCH = 22 + 0xffff;

export const startsLikeZip = (bytes: Uint8Array): boolean =>
  bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && (bytes[2] === 3 || bytes[2] === 5);

/**
 * The entries of a zip archive (APPNOTE.TXT 4.3.12 and 4.3.16), read from its central directory without inflating
 * anything, so a DOCX can be judged (is it a Word document? how large would it grow?) before a parser reads it.
 * `count` is the number the archive declares; at most `maxEntries` of them are read. Undefined when the bytes are
 * not a zip archive with a readable directory; a ZIP64 archive (sizes past 4 GB) reads as entries of size
 * 0xFFFFFFFF, which every size bound refuses.
 */
export function zipEntries(bytes: Uint8Array, maxEntries: number): { count: number; entries: ZipEntry[] } | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let end = -1;
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - MAX_END_SEARCH); at--) {
    if (view.getUint32(at, true) === END_SIGNATURE) {
      end = at;
      break;
    }
  }
  if (end < 0) return undefined;
  const count = view.getUint16(end + 10, true);
  const directoryStart = view.getUint32(end + 16, true);
  const entries: ZipEntry[] = [];
  let at = directoryStart;
  const names = new TextDecoder('utf-8');
  for (let i = 0; i < Math.min(count, maxEntries); i++) {
    if (at + 46 > bytes.length || view.getUint32(at, true) !== ENTRY_SIGNATURE) return undefined;
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    if (at + 46 + nameLength > bytes.length) return undefined;
    entries.push({
      name: names.decode(bytes.subarray(at + 46, at + 46 + nameLength)),
      compressedSize: view.getUint32(at + 20, true),
      uncompressedSize: view.getUint32(at + 24, true),
    });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return { count, entries };
}
