import type { FileService } from '../files/file-service.js';

/**
 * What the batch engine needs of the gateway's files (src/core/files/file-service.ts): an input file read as its owner's,
 * the output and error files written as the owner's (purpose `batch_output`). Another caller's file is absent.
 */
export type BatchFiles = Pick<FileService, 'get' | 'openContent' | 'create'>;
