// The API client: one method per operation of the OpenAPI document, grouped by resource.
// Requests and answers are typed by the generated schema through openapi-fetch, so a call
// that does not match the document does not compile.
import createClient, { type Client } from 'openapi-fetch';
import { ApiError } from './errors.js';
import { paginate } from './paging.js';
import type { paths } from './schema.js';
import { retryingFetch, timedFetch, type Fetch, type RetryOptions } from './transport.js';
import type * as T from './types.js';

export interface BoomerangOptions {
  /** The server, e.g. `https://boomerang.example`. Default: `$BOOMERANG_URL`, else `http://127.0.0.1:8080`. */
  baseUrl?: string;
  /** The API key, sent as `Authorization: Bearer …`. Default: `$BOOMERANG_API_KEY`. */
  apiKey?: string;
  /**
   * Where your receiver is mounted, e.g. `https://app.example/callbacks`:
   * `callbackUrl('order-paid')` is then `https://app.example/callbacks/order-paid`.
   */
  callbackBase?: string;
  /** Retries of calls that are safe to repeat; `false` for none. */
  retry?: RetryOptions | false;
  /** Each attempt's timeout in milliseconds (default 30 s). */
  timeoutMs?: number;
  /** The fetch to send with (default: the global one), e.g. to go through a proxy agent. */
  fetch?: Fetch;
}

/** Per-call options of a registration. */
export interface CreateOptions {
  /**
   * Registers the task at most once. Default: the task's `idempotency_key`, else a key
   * made for this call, so that the client's own retries never register it twice.
   */
  idempotencyKey?: string;
}

interface Core {
  api: Client<paths>;
  /** For calls that are safe to repeat: retried on connection errors, 5xx and 429. */
  safe: Fetch;
  /** For calls that are not: one attempt. */
  once: Fetch;
}

type Answer<D> = { data?: D; error?: unknown; response: Response };

/** The answer's body, or an `ApiError` built from its problem. */
async function unwrap<D>(call: Promise<Answer<D>>): Promise<D> {
  const { data, error, response } = await call;
  if (!response.ok) throw new ApiError(response.status, error, response.headers, response.statusText);
  return data as D;
}

/** A fresh idempotency key. */
const newKey = () => globalThis.crypto.randomUUID();

/** The URL of `alias` under a receiver mounted at `base` (`https://app.example/callbacks`). */
export function callbackUrl(base: string, alias: string): string {
  return `${base.replace(/\/+$/, '')}/${encodeURIComponent(alias)}`;
}

/**
 * A Boomerang client.
 *
 * ```ts
 * const boomerang = new Boomerang({ baseUrl: 'https://boomerang.example', apiKey });
 * const task = await boomerang.tasks.create({ url: 'https://app.example/callbacks/order-paid', delay: '5m' });
 * ```
 *
 * Errors are thrown as `ApiError`. Reads, `PUT`s, `DELETE`s, releases, pauses and
 * resumes, and registrations (which carry an idempotency key) are retried on connection
 * errors, timeouts, 5xx and 429 (after `Retry-After`); other calls are made once.
 */
export class Boomerang {
  readonly baseUrl: string;
  readonly tasks: Tasks;
  readonly bulk: Bulk;
  readonly schedules: Schedules;
  readonly policies: Policies;
  readonly templates: Templates;
  readonly flows: Flows;
  readonly breakers: Breakers;
  readonly orderKeys: OrderKeys;
  readonly signingSecrets: SigningSecrets;
  private readonly core: Core;
  private readonly callbackBase: string | undefined;

  constructor(options: BoomerangOptions = {}) {
    const env = globalThis.process?.env ?? {};
    this.baseUrl = (options.baseUrl ?? env.BOOMERANG_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
    const apiKey = options.apiKey ?? env.BOOMERANG_API_KEY;
    if (!apiKey) throw new TypeError('Boomerang: no API key (give apiKey, or set BOOMERANG_API_KEY)');
    this.callbackBase = options.callbackBase;
    const once = timedFetch(options.fetch ?? ((request) => globalThis.fetch(request)), options.timeoutMs ?? 30_000);
    this.core = {
      api: createClient<paths>({
        baseUrl: this.baseUrl,
        headers: { authorization: `Bearer ${apiKey}` },
        // A redirect would carry the API key elsewhere; the API answers none.
        redirect: 'error',
        fetch: once,
      }),
      safe: options.retry === false ? once : retryingFetch(once, options.retry),
      once,
    };
    this.tasks = new Tasks(this.core);
    this.bulk = new Bulk(this.core);
    this.schedules = new Schedules(this.core);
    this.policies = new Policies(this.core);
    this.templates = new Templates(this.core);
    this.flows = new Flows(this.core);
    this.breakers = new Breakers(this.core);
    this.orderKeys = new OrderKeys(this.core);
    this.signingSecrets = new SigningSecrets(this.core);
  }

  /**
   * The callback URL that a `Receiver` mounted at `callbackBase` dispatches to the
   * handler registered as `alias`.
   */
  callbackUrl(alias: string): string {
    if (this.callbackBase === undefined) throw new TypeError('Boomerang: callbackUrl needs the callbackBase option');
    return callbackUrl(this.callbackBase, alias);
  }

  /** `GET /healthz`: the server's process answers. */
  healthz(): Promise<T.Health> {
    return unwrap(this.core.api.GET('/healthz', { fetch: this.core.safe }));
  }

  /** `GET /readyz`: the server can take work (an `ApiError` with status 503 if not). */
  readyz(): Promise<T.Health> {
    return unwrap(this.core.api.GET('/readyz', { fetch: this.core.safe }));
  }

  /** `GET /openapi.json`: the API's OpenAPI 3.1 document. */
  openapi(): Promise<Record<string, unknown>> {
    return unwrap(this.core.api.GET('/openapi.json', { fetch: this.core.safe }));
  }

  /** `GET /metrics`: the local server's metrics, in the OpenMetrics text format. */
  metrics(): Promise<string> {
    return unwrap(this.core.api.GET('/metrics', { fetch: this.core.safe, parseAs: 'text' }));
  }

  /** `GET /v1/stats`: counts by state, the last hour's deliveries and the busy destinations. */
  stats(): Promise<T.Stats> {
    return unwrap(this.core.api.GET('/v1/stats', { fetch: this.core.safe }));
  }
}

class Resource {
  constructor(protected readonly core: Core) {}
}

export class Tasks extends Resource {
  /**
   * `POST /v1/tasks`: registers a callback. Sent with an idempotency key (see
   * `CreateOptions`), so it is retried like a read; but a task with `on_key: 'replace'`
   * and no key of its own takes none (the server refuses it there), and is sent once.
   */
  create(task: T.TaskRequest, options: CreateOptions = {}): Promise<T.Task> {
    if (options.idempotencyKey === undefined && !task.idempotency_key && task.on_key === 'replace') {
      // The server refuses an idempotency key with `on_key: replace` (a repeat replaces the
      // task again, or makes a new one once an attempt has begun), so it is sent once.
      return unwrap(this.core.api.POST('/v1/tasks', { body: task, fetch: this.core.once }));
    }
    const key = options.idempotencyKey ?? (task.idempotency_key ? undefined : newKey());
    return unwrap(this.core.api.POST('/v1/tasks', {
      body: task,
      params: key === undefined ? {} : { header: { 'Idempotency-Key': key } },
      fetch: this.core.safe,
    }));
  }

  /**
   * `POST /v1/tasks/batch`: registers up to 100 tasks at once. A task without an
   * `idempotency_key` is given one, so the batch is retried safely. One result per task,
   * in order (`status` 201 new, 200 a repeat, or a `problem`).
   */
  createBatch(tasks: T.TaskRequest[]): Promise<T.BatchResult> {
    const keyed = tasks.map((task) => (task.idempotency_key ? task : { ...task, idempotency_key: newKey() }));
    return unwrap(this.core.api.POST('/v1/tasks/batch', { body: { tasks: keyed }, fetch: this.core.safe }));
  }

  /** `GET /v1/tasks/{id}`: the task and its attempts. */
  get(id: string): Promise<T.Task> {
    return unwrap(this.core.api.GET('/v1/tasks/{id}', { params: { path: { id } }, fetch: this.core.safe }));
  }

  /** `GET /v1/tasks`: one page, newest first; pass `next_cursor` back as `cursor`. */
  list(query: T.TaskListQuery = {}): Promise<T.TaskPage> {
    return unwrap(this.core.api.GET('/v1/tasks', { params: { query }, fetch: this.core.safe }));
  }

  /** Every task `list` would give, page after page: `for await (const task of tasks.iterate())`. */
  iterate(query: Omit<T.TaskListQuery, 'cursor'> = {}): AsyncGenerator<T.Task, void, undefined> {
    return paginate((cursor) => this.list({ ...query, cursor }), (page) => page.tasks, (page) => page.next_cursor);
  }

  /** `DELETE /v1/tasks/{id}`: cancels a scheduled or held task (409 if under way or ended). */
  cancel(id: string): Promise<T.Task> {
    return unwrap(this.core.api.DELETE('/v1/tasks/{id}', { params: { path: { id } }, fetch: this.core.safe }));
  }

  /** `DELETE /v1/tasks?key=`: cancels every scheduled or held task with this business key. */
  cancelByKey(key: string): Promise<T.KeyCancelResult> {
    return unwrap(this.core.api.DELETE('/v1/tasks', { params: { query: { key } }, fetch: this.core.safe }));
  }

  /** `POST /v1/tasks/{id}/retry`: gives a failed task a new round of its retry policy. */
  retry(id: string): Promise<T.Task> {
    return unwrap(this.core.api.POST('/v1/tasks/{id}/retry', { params: { path: { id } }, fetch: this.core.once }));
  }

  /** `POST /v1/tasks/{id}/release`: releases a held task for delivery (a repeat answers it as it is). */
  release(id: string): Promise<T.Task> {
    return unwrap(this.core.api.POST('/v1/tasks/{id}/release', { params: { path: { id } }, fetch: this.core.safe }));
  }

  /** `POST /v1/tasks/release?key=`: releases every held task with this business key. */
  releaseByKey(key: string): Promise<T.KeyReleaseResult> {
    return unwrap(this.core.api.POST('/v1/tasks/release', { params: { query: { key } }, fetch: this.core.safe }));
  }
}

export class Bulk extends Resource {
  /** `POST /v1/tasks/bulk` with `dry_run`: how many tasks the action would take, and a sample. Changes nothing. */
  dryRun(request: Omit<T.BulkRequest, 'dry_run'>): Promise<T.BulkPreview> {
    return unwrap(this.core.api.POST('/v1/tasks/bulk', { body: { ...request, dry_run: true }, fetch: this.core.safe })) as Promise<T.BulkPreview>;
  }

  /** `POST /v1/tasks/bulk`: starts a job that retries, cancels or releases every task the filter takes. */
  start(request: Omit<T.BulkRequest, 'dry_run'>): Promise<T.BulkJob> {
    return unwrap(this.core.api.POST('/v1/tasks/bulk', { body: { ...request, dry_run: false }, fetch: this.core.once })) as Promise<T.BulkJob>;
  }

  /** `GET /v1/bulk-jobs`: the newest jobs, newest first. */
  listJobs(): Promise<T.BulkJobs> {
    return unwrap(this.core.api.GET('/v1/bulk-jobs', { fetch: this.core.safe }));
  }

  /** `GET /v1/bulk-jobs/{id}`: a job and its progress. */
  getJob(id: string): Promise<T.BulkJob> {
    return unwrap(this.core.api.GET('/v1/bulk-jobs/{id}', { params: { path: { id } }, fetch: this.core.safe }));
  }
}

export class Schedules extends Resource {
  /** `POST /v1/schedules`: a recurring callback (`cron` or `every`). Made once: not retried. */
  create(schedule: T.ScheduleRequest): Promise<T.Schedule> {
    return unwrap(this.core.api.POST('/v1/schedules', { body: schedule, fetch: this.core.once }));
  }

  /** `GET /v1/schedules`: one page; pass `next_cursor` back as `cursor`. */
  list(query: T.ScheduleListQuery = {}): Promise<T.SchedulePage> {
    return unwrap(this.core.api.GET('/v1/schedules', { params: { query }, fetch: this.core.safe }));
  }

  /** Every schedule, page after page. */
  iterate(query: Omit<T.ScheduleListQuery, 'cursor'> = {}): AsyncGenerator<T.Schedule, void, undefined> {
    return paginate((cursor) => this.list({ ...query, cursor }), (page) => page.schedules, (page) => page.next_cursor);
  }

  /** `GET /v1/schedules/{id}`. */
  get(id: string): Promise<T.Schedule> {
    return unwrap(this.core.api.GET('/v1/schedules/{id}', { params: { path: { id } }, fetch: this.core.safe }));
  }

  /** `DELETE /v1/schedules/{id}`: no more occurrences. */
  async delete(id: string): Promise<void> {
    await unwrap(this.core.api.DELETE('/v1/schedules/{id}', { params: { path: { id } }, fetch: this.core.safe }));
  }

  /** `POST /v1/schedules/{id}/pause`. */
  pause(id: string): Promise<T.Schedule> {
    return unwrap(this.core.api.POST('/v1/schedules/{id}/pause', { params: { path: { id } }, fetch: this.core.safe }));
  }

  /** `POST /v1/schedules/{id}/resume`. */
  resume(id: string): Promise<T.Schedule> {
    return unwrap(this.core.api.POST('/v1/schedules/{id}/resume', { params: { path: { id } }, fetch: this.core.safe }));
  }
}

export class Policies extends Resource {
  /** `GET /v1/policies`. */
  list(): Promise<T.Policies> {
    return unwrap(this.core.api.GET('/v1/policies', { fetch: this.core.safe }));
  }

  /** `GET /v1/policies/{name}`. */
  get(name: string): Promise<T.Policy> {
    return unwrap(this.core.api.GET('/v1/policies/{name}', { params: { path: { name } }, fetch: this.core.safe }));
  }

  /** `PUT /v1/policies/{name}`: stores a named retry policy (and optionally a flow). */
  put(name: string, policy: T.PolicyRequest): Promise<T.Policy> {
    return unwrap(this.core.api.PUT('/v1/policies/{name}', { params: { path: { name } }, body: policy, fetch: this.core.safe }));
  }

  /** `DELETE /v1/policies/{name}`. */
  async delete(name: string): Promise<void> {
    await unwrap(this.core.api.DELETE('/v1/policies/{name}', { params: { path: { name } }, fetch: this.core.safe }));
  }
}

export class Templates extends Resource {
  /** `GET /v1/templates`. */
  list(): Promise<T.Templates> {
    return unwrap(this.core.api.GET('/v1/templates', { fetch: this.core.safe }));
  }

  /** `GET /v1/templates/{name}`. */
  get(name: string): Promise<T.Template> {
    return unwrap(this.core.api.GET('/v1/templates/{name}', { params: { path: { name } }, fetch: this.core.safe }));
  }

  /** `PUT /v1/templates/{name}`. */
  put(name: string, template: T.TemplateRequest): Promise<T.Template> {
    return unwrap(this.core.api.PUT('/v1/templates/{name}', { params: { path: { name } }, body: template, fetch: this.core.safe }));
  }

  /** `DELETE /v1/templates/{name}`. */
  async delete(name: string): Promise<void> {
    await unwrap(this.core.api.DELETE('/v1/templates/{name}', { params: { path: { name } }, fetch: this.core.safe }));
  }
}

export class Flows extends Resource {
  /** `GET /v1/flows`: the flows paused, or with tasks waiting or in flight. */
  list(): Promise<T.Flows> {
    return unwrap(this.core.api.GET('/v1/flows', { fetch: this.core.safe }));
  }

  /** `GET /v1/flows/{key}`. */
  get(key: string): Promise<T.Flow> {
    return unwrap(this.core.api.GET('/v1/flows/{key}', { params: { path: { key } }, fetch: this.core.safe }));
  }

  /** `POST /v1/flows/{key}/pause`: the flow's tasks wait until it is resumed. */
  pause(key: string): Promise<T.Flow> {
    return unwrap(this.core.api.POST('/v1/flows/{key}/pause', { params: { path: { key } }, fetch: this.core.safe }));
  }

  /** `POST /v1/flows/{key}/resume`. */
  resume(key: string): Promise<T.Flow> {
    return unwrap(this.core.api.POST('/v1/flows/{key}/resume', { params: { path: { key } }, fetch: this.core.safe }));
  }
}

export class Breakers extends Resource {
  /** `GET /v1/breakers`: the settings and the open breakers. */
  list(): Promise<T.Breakers> {
    return unwrap(this.core.api.GET('/v1/breakers', { fetch: this.core.safe }));
  }

  /** `POST /v1/breakers/open`: stops calls to a destination (any URL of it). */
  open(destination: string): Promise<T.Breaker> {
    return unwrap(this.core.api.POST('/v1/breakers/open', { body: { destination }, fetch: this.core.safe }));
  }

  /** `POST /v1/breakers/close`: lets calls to a destination go again. */
  close(destination: string): Promise<T.Breaker> {
    return unwrap(this.core.api.POST('/v1/breakers/close', { body: { destination }, fetch: this.core.safe }));
  }

  /** `PUT /v1/breakers/settings`. */
  putSettings(settings: T.BreakerSettingsRequest): Promise<T.BreakerSettings> {
    return unwrap(this.core.api.PUT('/v1/breakers/settings', { body: settings, fetch: this.core.safe }));
  }
}

export class OrderKeys extends Resource {
  /** `GET /v1/order-keys`: one page in key order; pass `next_cursor` back as `after`. */
  list(query: T.OrderKeyListQuery = {}): Promise<T.OrderKeyPage> {
    return unwrap(this.core.api.GET('/v1/order-keys', { params: { query }, fetch: this.core.safe }));
  }

  /** Every order key, page after page. */
  iterate(query: Omit<T.OrderKeyListQuery, 'after'> = {}): AsyncGenerator<T.OrderKey, void, undefined> {
    return paginate((after) => this.list({ ...query, after }), (page) => page.keys, (page) => page.next_cursor);
  }

  /** `GET /v1/order-keys/{key}`: the key's head task and backlog. */
  get(key: string): Promise<T.OrderKey> {
    return unwrap(this.core.api.GET('/v1/order-keys/{key}', { params: { path: { key } }, fetch: this.core.safe }));
  }
}

export class SigningSecrets extends Resource {
  /** `GET /v1/signing-secrets`: the secrets in force, newest first. */
  list(): Promise<T.SigningSecrets> {
    return unwrap(this.core.api.GET('/v1/signing-secrets', { fetch: this.core.safe }));
  }

  /** `POST /v1/signing-secrets`: a new secret signs from now on; the others go on for `grace_period`. Not retried. */
  rotate(request: T.RotationRequest = {}): Promise<T.SigningSecrets> {
    return unwrap(this.core.api.POST('/v1/signing-secrets', { body: request, fetch: this.core.once }));
  }

  /** `DELETE /v1/signing-secrets/{id}`: the secret stops signing at once. */
  retire(id: string): Promise<T.SigningSecrets> {
    return unwrap(this.core.api.DELETE('/v1/signing-secrets/{id}', { params: { path: { id } }, fetch: this.core.safe }));
  }
}
