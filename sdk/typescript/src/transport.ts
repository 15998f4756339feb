// The HTTP transport under the typed client: one fetch per attempt, each with a timeout,
// and, for calls that are safe to repeat, retries with backoff.
import { retryAfterMs } from './errors.js';

/** How calls that are safe to repeat are retried. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 4). `1` turns retries off. */
  attempts?: number;
  /** The first backoff, doubled at each retry, with full jitter (default 250 ms). */
  initialDelayMs?: number;
  /** The longest backoff between two attempts (default 5 s). */
  maxDelayMs?: number;
  /**
   * The longest `Retry-After` waited for (default 60 s). A server that asks for longer
   * gets its answer passed on as an `ApiError` (with `retryAfter`) instead of a wait.
   */
  maxRetryAfterMs?: number;
}

export type Fetch = (request: Request) => Promise<Response>;

const DEFAULTS: Required<RetryOptions> = {
  attempts: 4,
  initialDelayMs: 250,
  maxDelayMs: 5000,
  maxRetryAfterMs: 60_000,
};

/** Statuses worth another try: the server's overload and outages, and its rate limit. */
function retryable(status: number): boolean {
  return status === 429 || status >= 500;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One attempt: the request as given (cloned, so its body can be sent again) with a timeout. */
export function timedFetch(fetchImpl: Fetch, timeoutMs: number): Fetch {
  return (request) => fetchImpl(new Request(request.clone(), { signal: AbortSignal.timeout(timeoutMs) }));
}

/**
 * Repeats `attempt` on connection errors, timeouts, 5xx and 429, honouring `Retry-After`;
 * the last answer (or error) is the caller's. Only for requests whose repetition does no
 * harm: reads, PUT/DELETE, and registrations carrying an idempotency key.
 */
export function retryingFetch(attempt: Fetch, options: RetryOptions = {}): Fetch {
  const o = { ...DEFAULTS, ...options };
  return async (request) => {
    for (let n = 1; ; n++) {
      const last = n >= o.attempts;
      const backoff = Math.random() * Math.min(o.maxDelayMs, o.initialDelayMs * 2 ** (n - 1));
      let response: Response;
      try {
        response = await attempt(request);
      } catch (error) {
        if (last) throw error;
        await sleep(backoff);
        continue;
      }
      if (last || !retryable(response.status)) return response;
      const asked = retryAfterMs(response.headers.get('retry-after'), Date.now());
      if (asked !== undefined && asked > o.maxRetryAfterMs) return response;
      // Free the connection before waiting: the body of an answer we drop is not read.
      await response.body?.cancel().catch(() => {});
      await sleep(asked ?? backoff);
    }
  };
}
