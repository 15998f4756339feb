// The receiver as a plain Node `http` request handler.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { aliasOf, type Answer, type Receiver } from './core.js';

export interface NodeHandlerOptions {
  /** The largest body read, in bytes (default 1 MiB; Boomerang sends at most 256 KiB); a larger one is answered 413. */
  maxBodyBytes?: number;
}

const DEFAULT_MAX_BODY = 1024 * 1024;

/** The request's body, whole, or `undefined` past `limit` bytes. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      req.resume(); // drain the rest, so the answer can be read by the sender
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export function send(res: ServerResponse, answer: Answer): void {
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body);
}

/**
 * `http.createServer(nodeHandler(receiver))`: every request is a delivery, dispatched by
 * the last segment of its path (`/callbacks/order-paid` → `order-paid`).
 */
export function nodeHandler(receiver: Receiver, options: NodeHandlerOptions = {}) {
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  return (req: IncomingMessage, res: ServerResponse): void => {
    void (async () => {
      try {
        const body = await readBody(req, limit);
        if (body === undefined) return send(res, { status: 413, headers: {}, body: 'body too large' });
        send(res, await receiver.handle({ alias: aliasOf(req.url ?? ''), headers: req.headers, body }));
      } catch {
        // The request was broken off while its body was read: there is no one to answer.
        if (!res.headersSent) send(res, { status: 400, headers: {}, body: 'unreadable request' });
      }
    })();
  };
}
