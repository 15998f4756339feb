import type { components } from './schema.js';

/** An RFC 9457 problem, as every Boomerang error is answered. */
export type Problem = components['schemas']['Problem'];

/**
 * The API answered with an error status. Carries the problem's parts: `title`, `detail`,
 * `type`, and `field`, the request field at fault (`"delay"`, `"retry.schedule[1]"`,
 * `"tasks[3].delay"`) when one is.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** The HTTP status (`422`, `404`, `409`, `429`…). */
  readonly status: number;
  /** The problem's `type` (`urn:boomerang:problem:invalid-field`): stable, for code. */
  readonly type: string | undefined;
  /** The problem's `title`, for people. */
  readonly title: string;
  /** The problem's `detail`, for people. */
  readonly detail: string;
  /** The request field at fault, as a path, when the problem names one. */
  readonly field: string | undefined;
  /** Seconds the server asked to wait (`Retry-After` on a `429` or `503`). */
  readonly retryAfter: number | undefined;
  /** The whole body: the problem, or the text of a body that is not one. */
  readonly body: unknown;

  constructor(status: number, body: unknown, headers?: Headers, statusText = '') {
    const problem = isProblem(body) ? body : undefined;
    const title = problem?.title ?? (statusText || `HTTP ${status}`);
    const detail = problem?.detail ?? (typeof body === 'string' ? body : '');
    super(detail ? `${status} ${title}: ${detail}` : `${status} ${title}`);
    this.status = status;
    this.type = problem?.type;
    this.title = title;
    this.detail = detail;
    this.field = problem?.field ?? undefined;
    const wait = retryAfterMs(headers?.get('retry-after') ?? null, Date.now());
    this.retryAfter = wait === undefined ? undefined : Math.ceil(wait / 1000);
    this.body = body;
  }
}

function isProblem(body: unknown): body is Problem {
  return typeof body === 'object' && body !== null
    && typeof (body as Problem).title === 'string' && typeof (body as Problem).status === 'number';
}

/** `Retry-After` (seconds, or an HTTP date) as milliseconds from `now`; undefined if absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
