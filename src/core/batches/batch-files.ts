/**
 * What the batch engine needs of the gateway's files (the Files API's FileService, issue 34): read an input file
 * its owner uploaded, and write the output and error files as the owner's. Another caller's file is absent.
 */
export interface BatchFileObject {
  id: string;
  purpose: string;
  bytes?: number;
}

export interface BatchFiles {
  get(owner: string, id: string): Promise<BatchFileObject | undefined>;
  openContent(
    owner: string,
    id: string,
  ): Promise<{ object: BatchFileObject; stream: AsyncIterable<Uint8Array> } | undefined>;
  create(
    owner: string,
    input: { purpose: string; filename: string; content: AsyncIterable<Uint8Array>; expiresAt?: number },
  ): Promise<{ id: string }>;
}
