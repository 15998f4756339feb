// The receiver's core, free of any HTTP framework: a delivery's raw body and headers in,
// the answer for Boomerang out. The Node `http` and Express adapters only read the body
// and write the answer.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { expressHandler, type ExpressHandler } from './express.js';
import { nodeHandler, type NodeHandlerOptions } from './node.js';
import { PermanentFailure, RetryLater } from './errors.js';

/** Request headers as Node (`req.headers`) or the fetch API (`Headers`) give them. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

/** One delivery, as a handler receives it. */
export interface Delivery {
  /** The alias the delivery was addressed to: the last path segment of its URL. */
  alias: string;
  /** The task's id (`webhook-id`): the same on every attempt, to deduplicate by. */
  taskId: string;
  /** The attempt's number (`boomerang-attempt`), 1 for the first. */
  attempt: number | undefined;
  /** When the delivery was signed (`webhook-timestamp`). */
  timestamp: Date;
  /**
   * The body: parsed when its `content-type` says JSON (`application/json` or `…+json`) and
   * it parses, else the text (a body that says JSON and is not is handed over as text, not
   * refused: Boomerang would send it again and again); `undefined` when empty.
   */
  body: unknown;
  /** The body as it was sent (and signed). */
  rawBody: string;
  /** The request's headers, names in lower case. */
  headers: Record<string, string>;
}

/**
 * Handles one delivery. Return normally and Boomerang counts the attempt a success; what
 * is returned is the answer's body, for tasks with `expect_body`: a string as text, bytes
 * (`Buffer`, `Uint8Array`) as they are, any other value as JSON, nothing as an empty body.
 * Throw `RetryLater` to have it tried again, `PermanentFailure` to fail the
 * task at once; any other error answers 500, and Boomerang retries.
 */
export type Handler = (delivery: Delivery) => unknown;

export interface ReceiverOptions {
  /**
   * The signing secrets (`whsec_…`) a delivery may be signed with. Give every secret in
   * force while a rotation overlaps: a delivery is accepted if any of them signed it.
   */
  secrets: string | readonly string[];
  /** Told of every error a handler throws other than `RetryLater` and `PermanentFailure` (default: `console.error`). */
  onError?: (error: unknown, delivery: Delivery) => void;
}

/** The answer for Boomerang. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string | Uint8Array;
}

/** A delivery as it arrived: its alias, headers and raw body. */
export interface IncomingDelivery {
  alias: string | undefined;
  headers: HeadersLike;
  body: string | Uint8Array;
}

/**
 * Receives Boomerang's deliveries: verifies each one's Standard Webhooks signature (the
 * `standardwebhooks` library, with its 5-minute tolerance for the timestamp) and hands it
 * to the handler registered for its alias.
 *
 * A forged, unsigned or stale delivery is answered `401`, an unknown alias `404`. A
 * handler's outcome becomes the status Boomerang acts on: `200` success; `RetryLater`
 * `503` with `Retry-After` (seconds given) or `500`; `PermanentFailure` `410`.
 */
export class Receiver {
  private readonly verifiers: Webhook[];
  private readonly handlers = new Map<string, Handler>();
  private readonly onError: (error: unknown, delivery: Delivery) => void;

  constructor(options: ReceiverOptions) {
    const secrets = typeof options.secrets === 'string' ? [options.secrets] : [...options.secrets];
    if (secrets.length === 0) throw new TypeError('Receiver: give at least one signing secret');
    this.verifiers = secrets.map((secret) => new Webhook(secret));
    this.onError = options.onError ?? ((error, delivery) => {
      console.error(`boomerang-client: handler for ${delivery.alias} failed on task ${delivery.taskId}:`, error);
    });
  }

  /**
   * Calls `handler` for each delivery to `alias` (the last segment of the callback URL). An
   * alias has one handler: registering it again throws.
   */
  register(alias: string, handler: Handler): this {
    if (alias === '' || alias.includes('/')) throw new TypeError(`Receiver: an alias is one path segment, not ${JSON.stringify(alias)}`);
    if (this.handlers.has(alias)) throw new TypeError(`Receiver: ${JSON.stringify(alias)} already has a handler`);
    this.handlers.set(alias, handler);
    return this;
  }

  /** Verifies and dispatches one delivery; never throws. */
  async handle(incoming: IncomingDelivery): Promise<Answer> {
    const headers = normalize(incoming.headers);
    const raw = Buffer.isBuffer(incoming.body) || typeof incoming.body === 'string'
      ? incoming.body
      : Buffer.from(incoming.body.buffer, incoming.body.byteOffset, incoming.body.byteLength);
    if (!this.verified(raw, headers)) return text(401, 'invalid or stale signature');

    const handler = incoming.alias === undefined ? undefined : this.handlers.get(incoming.alias);
    if (handler === undefined) return text(404, 'no handler for this alias');

    const rawBody = raw.toString();
    const attempt = Number.parseInt(headers['boomerang-attempt'] ?? '', 10);
    const delivery: Delivery = {
      alias: incoming.alias as string,
      taskId: headers['webhook-id'] as string,
      attempt: Number.isNaN(attempt) ? undefined : attempt,
      // Read as the library read it when it checked the signature (leading digits).
      timestamp: new Date(Number.parseInt(headers['webhook-timestamp'] as string, 10) * 1000),
      body: parseBody(rawBody, headers['content-type']),
      rawBody,
      headers,
    };
    try {
      return success(await handler(delivery));
    } catch (error) {
      if (error instanceof PermanentFailure) return text(410, error.message);
      if (error instanceof RetryLater) {
        if (error.seconds === undefined) return text(500, error.message);
        const answer = text(503, error.message);
        answer.headers['retry-after'] = String(Math.ceil(error.seconds));
        return answer;
      }
      this.onError(error, delivery);
      return text(500, 'handler failed');
    }
  }

  /** A Node `http` request handler: `http.createServer(receiver.nodeHandler())`. */
  nodeHandler(options?: NodeHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
    return nodeHandler(this, options);
  }

  /** An Express handler: `app.post('/callbacks/:alias', receiver.expressHandler())`. */
  expressHandler(options?: NodeHandlerOptions): ExpressHandler {
    return expressHandler(this, options);
  }

  /** Signed by any of the secrets, with a timestamp within the library's tolerance. */
  private verified(raw: string | Buffer, headers: Record<string, string>): boolean {
    for (const verifier of this.verifiers) {
      try {
        verifier.verify(raw, headers, { jsonParse: false });
        return true;
      } catch (error) {
        if (!(error instanceof WebhookVerificationError)) throw error;
      }
    }
    return false;
  }
}

/** The alias of a request path: its last segment, decoded (`/callbacks/order-paid?x=1` → `order-paid`). */
export function aliasOf(path: string): string | undefined {
  const segment = path.split('?')[0]?.split('/').pop();
  if (!segment) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function normalize(headers: HeadersLike): Record<string, string> {
  const out: Record<string, string> = {};
  const entries = headers instanceof Headers ? headers.entries() : Object.entries(headers);
  for (const [name, value] of entries) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function parseBody(raw: string, contentType: string | undefined): unknown {
  if (raw === '') return undefined;
  if (contentType && /^application\/(?:[\w.-]+\+)?json\b/i.test(contentType.trim())) {
    try {
      return JSON.parse(raw);
    } catch {
      // Sent as JSON but not JSON (a header named the type): the handler gets the text.
    }
  }
  return raw;
}

function text(status: number, body: string): Answer {
  return { status, headers: { 'content-type': 'text/plain; charset=utf-8' }, body };
}

function success(result: unknown): Answer {
  if (result === undefined || result === null) return text(200, '');
  if (typeof result === 'string') return text(200, result);
  // A Buffer is a Uint8Array: sent byte for byte, not as the JSON of its object form.
  if (result instanceof Uint8Array) return { status: 200, headers: { 'content-type': 'application/octet-stream' }, body: result };
  return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(result) };
}
