/**
 * Thrown by a handler: the delivery could not be handled now; Boomerang tries it again.
 *
 * Without `seconds` the receiver answers `500`, and the task's retry policy decides when
 * the next attempt comes. With `seconds` it answers `503` with `Retry-After: seconds`,
 * which Boomerang honours in place of the policy's wait (bounded by the policy's longest
 * interval) — and which also pauses every call to this whole destination (scheme, host and
 * port) for that long, at most 5 minutes, not only this task's. Give seconds when the
 * receiver as a whole is overloaded or down for maintenance; leave them out when only this
 * delivery cannot be handled yet.
 */
export class RetryLater extends Error {
  override readonly name = 'RetryLater';

  constructor(
    /** Seconds to wait, sent as `Retry-After` (rounded up to whole seconds). */
    readonly seconds?: number,
    message = 'retry later',
  ) {
    super(message);
    if (seconds !== undefined && !(Number.isFinite(seconds) && seconds >= 0)) {
      throw new RangeError(`RetryLater: seconds must be a number of at least 0, not ${seconds}`);
    }
  }
}

/**
 * Thrown by a handler: the delivery can never succeed (the order no longer exists…). The
 * receiver answers `410 Gone`, and Boomerang fails the task at once, with no more attempts
 * (its failure is reported as any final failure is).
 */
export class PermanentFailure extends Error {
  override readonly name = 'PermanentFailure';

  constructor(message = 'permanent failure') {
    super(message);
  }
}
