// The receiver as an Express handler. Typed on Node's own request and response, which
// Express's extend, so that this package needs no Express types.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { aliasOf, type Receiver } from './core.js';
import { readBody, send, type NodeHandlerOptions } from './node.js';

/** What the handler reads of Express's request: Node's, plus what Express adds. */
export interface ExpressRequest extends IncomingMessage {
  body?: unknown;
  params?: Record<string, string | undefined>;
  originalUrl?: string;
}

export type ExpressHandler = (req: ExpressRequest, res: ServerResponse, next: (error?: unknown) => void) => void;

/**
 * `app.post('/callbacks/:alias', expressHandler(receiver))`, or mounted with
 * `app.use('/callbacks', …)`: the alias is the `:alias` route parameter, else the last
 * segment of the path.
 *
 * Verification needs the body exactly as it was sent. Leave the route without a body
 * parser (the handler reads the body itself), or give it `express.raw({ type: '*\/*' })`;
 * a body already parsed by `express.json()` cannot be verified, and is answered 500.
 */
export function expressHandler(receiver: Receiver, options: NodeHandlerOptions = {}): ExpressHandler {
  const limit = options.maxBodyBytes ?? 1024 * 1024;
  return (req, res, next) => {
    void (async () => {
      let body: Buffer | string | undefined;
      if (Buffer.isBuffer(req.body) || typeof req.body === 'string') {
        body = req.body;
      } else if (!req.readableEnded) {
        body = await readBody(req, limit);
        if (body === undefined) return send(res, { status: 413, headers: {}, body: 'body too large' });
      } else {
        return next(new Error('boomerang-client: the body was parsed before the receiver; '
          + "use express.raw({ type: '*/*' }) or no body parser on the receiver's route"));
      }
      const alias = req.params?.alias ?? aliasOf(req.originalUrl ?? req.url ?? '');
      send(res, await receiver.handle({ alias, headers: req.headers, body }));
    })().catch(next);
  };
}
