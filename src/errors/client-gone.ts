/** Thrown (as an abort reason) when the caller disconnects; nothing is sent back, there is nobody to send to. */
export class ClientGoneError extends Error {
  constructor() {
    super('the client closed the connection');
    this.name = 'ClientGoneError';
  }
}
