// The Boomerang API's types, generated from its OpenAPI document (`boomerang openapi`)
// by scripts/generate.mjs with openapi-typescript. Do not edit: run `npm run generate`.
export interface paths {
    "/console": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The console: sign in with an API key, then see and act on tasks. */
        get: operations["console"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/console/{file}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The console's script or style sheet. */
        get: operations["console_file"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Whether the server is up (no key needed): its process answers. For a liveness check;
         *     `/readyz` says whether it can take work.
         */
        get: operations["healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Metrics in the Prometheus / OpenMetrics text format.
         * @description Kept by the local server; the Lambdas print CloudWatch metric lines instead, and
         *     answer 404 here.
         */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document. */
        get: operations["openapi"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Whether the server can take work now (no key needed): the store takes a write, the
         *     data directory has room, the timer runs (on AWS: the table answers). For a load
         *     balancer's health check: `503` while any check fails, naming it and what it found (the
         *     error underneath is in the server's log).
         */
        get: operations["readyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/breakers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Your breaker settings, and your destinations whose breaker is open.
         * @description A destination's breaker opens after `failures` failed calls in a row spanning at least
         *     `span`: its deliveries then wait, using up no attempts, while one probe call at a time
         *     tests it (the first after `first_probe`, each failed one doubling the wait up to
         *     `max_probe`); a probe that succeeds closes it. Opening and closing each send an alert
         *     (`destination.opened`, `destination.closed`) to your alert destination.
         */
        get: operations["list_breakers"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/breakers/close": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Close a destination's breaker by hand: its deliveries go again (those waiting on a
         *     breaker opened by hand look again every 10 s).
         */
        post: operations["close_breaker"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/breakers/open": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Open a destination's breaker by hand: nothing is sent to it (and no probe) until it is
         *     closed by hand.
         */
        post: operations["open_breaker"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/breakers/settings": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** Set when your destinations' breakers open, and how they are probed. */
        put: operations["put_breaker_settings"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/bulk-jobs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Your newest bulk jobs (up to 50), newest first, with their progress. */
        get: operations["list_bulk_jobs"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/bulk-jobs/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A bulk job: its progress, and its report once finished. */
        get: operations["get_bulk_job"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/flows": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The tenant's busy or paused flows. */
        get: operations["list_flows"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/flows/{key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One flow (a flow no task has named yet is simply empty). */
        get: operations["get_flow"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/flows/{key}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Pause a flow: its tasks wait, unclaimed and uncounted, until it is resumed; calls
         *     already made run to their end. The pause outlives a restart.
         */
        post: operations["pause_flow"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/flows/{key}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Resume a flow: the tasks waiting in it are due at once, and its limits pace them. */
        post: operations["resume_flow"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/order-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Your order keys, in key order, each with its head (the task whose turn it is: `blocked`
         *     when it failed for good and holds the key) and its backlog.
         */
        get: operations["list_order_keys"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/order-keys/{key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One order key (a key no task holds a place in has no head and a backlog of 0). */
        get: operations["get_order_key"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/policies": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The tenant's named policies. */
        get: operations["list_policies"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/policies/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A named policy. */
        get: operations["get_policy"];
        /**
         * Create or replace a named policy.
         * @description The body is a retry policy as a task's `retry` takes it, and optionally a `flow` as a
         *     task's `flow` takes it. Tasks registered after this use it; tasks registered before
         *     keep what they were registered with.
         */
        put: operations["put_policy"];
        post?: never;
        /** Delete a named policy. Tasks registered with it keep it. */
        delete: operations["delete_policy"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the tenant's schedules, newest first. */
        get: operations["list_schedules"];
        put?: never;
        /**
         * Create a recurring callback.
         * @description Each occurrence is an ordinary task, with its own attempts, alerts and flow limits, and
         *     `schedule_id` set. Daylight-saving changes follow the zone: a local time a change skips
         *     fires once right after the gap, one it repeats fires once.
         */
        post: operations["create_schedule"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A schedule. */
        get: operations["get_schedule"];
        put?: never;
        post?: never;
        /** Delete a schedule: its pending occurrence is skipped (one under way finishes). */
        delete: operations["delete_schedule"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/{id}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Pause a schedule: its pending occurrence is skipped, and none follows until resumed. */
        post: operations["pause_schedule"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/schedules/{id}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Resume a paused schedule from its next slot (slots passed while paused do not fire). */
        post: operations["resume_schedule"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/signing-secrets": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Your signing secrets in force, newest first.
         * @description Every delivery (and alert) carries one Standard Webhooks signature from each, in one
         *     `webhook-signature` header, so a receiver that knows any one of them accepts it.
         */
        get: operations["list_signing_secrets"];
        put?: never;
        /**
         * Rotate: add a new secret that signs every delivery from now on.
         * @description The secrets in force go on signing beside it for `grace_period` (default 24h), the time
         *     your receivers have to switch to the new one; retire one sooner with `DELETE`. At most
         *     5 secrets are in force at once. The body may be left out.
         */
        post: operations["rotate_signing_secret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/signing-secrets/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Retire a secret: deliveries stop carrying its signature at once.
         * @description The only secret in force cannot be retired (rotate first).
         */
        delete: operations["retire_signing_secret"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Your tasks by state, the last hour of attempts, and your busy destinations.
         * @description What the console's counts, live panel and destinations show. The hour is kept in the server's
         *     memory: it starts again when the server restarts.
         */
        get: operations["stats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List tasks, newest first.
         * @description A page holds up to `limit` tasks (without their attempts); `next_cursor`, when set,
         *     fetches the next.
         */
        get: operations["list_tasks"];
        put?: never;
        /**
         * Register a callback.
         * @description Answers 201 with the new task, or 200 with the task registered before when the same
         *     idempotency key came with the same request.
         */
        post: operations["create_task"];
        /**
         * Cancel every scheduled or held task with a business key.
         * @description One request looks at up to 1,000 tasks with the key; `more: true` says to send it
         *     again.
         */
        delete: operations["cancel_by_key"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Register up to 100 callbacks at once.
         * @description Every task is checked before any is stored: one bad task refuses the batch with a
         *     problem naming it (`tasks[3].delay`). Then each is stored as `POST /v1/tasks` would; the
         *     answer holds one result per task, in order: its status (201, 200 for an idempotent
         *     repeat, or a problem's) and the task or the problem.
         */
        post: operations["create_tasks"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/bulk": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Retry, cancel or release every task a filter takes.
         * @description With `dry_run`, answers how many tasks it would act on and a sample of them, changing
         *     nothing. Otherwise starts a job (`202`, its URL in `Location`) that pages through your
         *     tasks and acts on each one the filter takes, at most `per_second` a second; follow it
         *     at `/v1/bulk-jobs/{id}`. A job goes on after a restart where it stopped, and never acts
         *     on a task twice: a task it retried that failed again is not retried again by it. A
         *     task registered after the job began is not its. Retried and released tasks are
         *     delivered like any other, within their destination's limits and breaker.
         */
        post: operations["bulk_action"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/release": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Release every held task with a business key.
         * @description One request looks at up to 1,000 tasks with the key; `more: true` says to send it
         *     again.
         */
        post: operations["release_by_key"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A task, with its attempts. */
        get: operations["get_task"];
        put?: never;
        post?: never;
        /**
         * Cancel a scheduled or held task.
         * @description A task being delivered, or finished, cannot be canceled (409). A canceled task stays
         *     readable.
         */
        delete: operations["cancel_task"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/{id}/release": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Release a held task: it is called at its fire time (or now, if that has passed).
         * @description A repeat answers the task as it is now (200 either way); a task that is not held and
         *     was never released (canceled, say) is a 409.
         */
        post: operations["release_task"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tasks/{id}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Redrive a failed task: it is scheduled again, now, with a new round of attempts. */
        post: operations["retry_task"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/templates": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The tenant's task templates. */
        get: operations["list_templates"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/templates/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A task template. */
        get: operations["get_template"];
        /**
         * Create or replace a task template.
         * @description Each field is a task's field of the same name (`url_base` aside), checked as a task's
         *     is. Tasks registered after this take it; tasks registered before keep what they were
         *     registered with.
         */
        put: operations["put_template"];
        post?: never;
        /**
         * Delete a task template. Tasks registered with it keep its settings; a task that names
         *     it afterwards is refused.
         */
        delete: operations["delete_template"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description `on_failure` and `on_success`: where a task's failures, or its success, are reported. */
        AlertRequest: {
            /** @description Headers to send, at most 50; values are never shown again */
            headers?: {
                [key: string]: string;
            } | null;
            /** @example https://example.com/hooks/boomerang-alerts */
            url: string;
        };
        /** @description An alert destination; like a task's, header values are not shown. */
        AlertView: {
            header_names: string[];
            url: string;
        };
        /** @enum {string} */
        AttemptOutcome: "succeeded" | "retrying" | "failed";
        AttemptView: {
            /** Format: int64 */
            duration_ms: number;
            error?: string | null;
            /** Format: int64 */
            lateness_ms: number;
            /** Format: int32 */
            number: number;
            outcome: components["schemas"]["AttemptOutcome"];
            response?: string | null;
            /** Format: date-time */
            scheduled_at: string;
            /** Format: date-time */
            started_at: string;
            /** Format: int32 */
            status_code?: number | null;
            /** @description Which worker made the attempt (host and process id, or a Lambda request id). */
            worker?: string | null;
        };
        /** @description One task of a batch: registered (201), repeated (200), or refused with a problem. */
        BatchItemView: {
            problem?: components["schemas"]["Problem"] | null;
            /** Format: int32 */
            status: number;
            task?: components["schemas"]["TaskView"] | null;
        };
        /** @description A batch registration: `{"tasks": [ … ]}`. */
        BatchRequest: {
            /** @description 1 to 100 tasks, each as `POST /v1/tasks` takes it. */
            tasks: components["schemas"]["TaskRequest"][];
        };
        /** @description What `POST /v1/tasks/batch` did: one result per task, in the order sent. */
        BatchView: {
            tasks: components["schemas"]["BatchItemView"][];
        };
        /** @description An interval of time; either end may be left out (`after` is included, `before` not). */
        BetweenRequest: {
            /** Format: date-time */
            after?: string | null;
            /** Format: date-time */
            before?: string | null;
        };
        /**
         * @description When a destination's breaker opens, and how it is probed; a field left out keeps its
         *     default.
         * @example {
         *       "failures": 20,
         *       "first_probe": "30s",
         *       "max_probe": "10m",
         *       "span": "1m"
         *     }
         */
        BreakerSettingsRequest: {
            /**
             * Format: int32
             * @description Failed calls in a row that open it (1–10000; default 20). A call fails when it
             *     times out, cannot connect, or is answered 5xx, 408 or 429.
             */
            failures?: number | null;
            /**
             * @description The wait before the first probe (1s to 24h; default 30s); each failed probe
             *     doubles it.
             * @example 30s
             */
            first_probe?: string | null;
            /**
             * @description The longest wait between probes (`first_probe` to 24h; default 10m).
             * @example 10m
             */
            max_probe?: string | null;
            /**
             * @description How long those failures must span at least (0s to 24h; default 1m).
             * @example 1m
             */
            span?: string | null;
        };
        /** @description A tenant's breaker settings, as they apply. */
        BreakerSettingsView: {
            /** Format: int32 */
            failures: number;
            /** @example 30s */
            first_probe: string;
            /** @example 10m */
            max_probe: string;
            /** @example 1m */
            span: string;
        };
        /**
         * @description One destination's breaker.
         * @example {
         *       "by_hand": false,
         *       "destination": "https://hooks.example.com:443",
         *       "next_probe_at": "2030-01-01T09:00:30Z",
         *       "opened_at": "2030-01-01T09:00:00Z",
         *       "probes_failed": 0,
         *       "state": "open"
         *     }
         */
        BreakerView: {
            /** @description Opened by an operator: it stays open until an operator closes it. */
            by_hand?: boolean;
            destination: string;
            /**
             * Format: date-time
             * @description When the next probe may go (`null` when opened by hand: no probe is made).
             */
            next_probe_at?: string | null;
            /** Format: date-time */
            opened_at?: string | null;
            /** Format: int32 */
            probes_failed?: number;
            /** @description `open` or `closed`. */
            state: string;
        };
        /** @description `GET /v1/breakers`: the settings, and the open breakers. */
        BreakersView: {
            open: components["schemas"]["BreakerView"][];
            settings: components["schemas"]["BreakerSettingsView"];
        };
        /**
         * @description A bulk job.
         * @example {
         *       "action": "retry",
         *       "created_at": "2030-01-01T09:00:00Z",
         *       "filter": {
         *         "destination": "https://hooks.example.com"
         *       },
         *       "id": "01J0000000000000000000000",
         *       "per_second": 100,
         *       "progress": {
         *         "done": 470,
         *         "matched": 480,
         *         "read": 500,
         *         "skipped": 10
         *       },
         *       "state": "running",
         *       "updated_at": "2030-01-01T09:00:05Z"
         *     }
         */
        BulkJobView: {
            /** @description `retry`, `cancel` or `release`. */
            action: string;
            /** Format: date-time */
            created_at: string;
            /** @description The filter, as it was read. */
            filter: Record<string, never>;
            /** Format: date-time */
            finished_at?: string | null;
            id: string;
            /**
             * Format: int32
             * @description Tasks acted on per second, at most.
             */
            per_second: number;
            progress: components["schemas"]["ProgressView"];
            /** @description `running` or `finished`. */
            state: string;
            /** Format: date-time */
            updated_at: string;
        };
        /** @description A tenant's newest bulk jobs (up to 50), newest first. */
        BulkJobsView: {
            jobs: components["schemas"]["BulkJobView"][];
        };
        /** @description What a bulk action would do now (a `dry_run`): nothing was changed. */
        BulkPreviewView: {
            action: string;
            /** @description False when the count stopped at the preview's time limit (20 s): a lower bound. */
            complete: boolean;
            /**
             * Format: int64
             * @description How many tasks it would act on.
             */
            count: number;
            /** @description The first of them (up to 10), newest first. */
            sample: components["schemas"]["TaskView"][];
        };
        /**
         * @example {
         *       "action": "retry",
         *       "dry_run": true,
         *       "filter": {
         *         "destination": "https://hooks.example.com",
         *         "ended": {
         *           "after": "2030-01-01T09:00:00Z"
         *         }
         *       }
         *     }
         */
        BulkRequest: {
            /**
             * @description `retry` (failed tasks: a new round of retries each), `cancel` (scheduled or held
             *     tasks) or `release` (held tasks).
             * @example retry
             */
            action: string;
            /** @description Take every task of the action's states (the filter is empty on purpose). */
            all?: boolean;
            /** @description Answer the count and a sample, changing nothing. */
            dry_run?: boolean;
            /**
             * @description Which tasks; every part given must hold. An empty filter is refused unless `all`
             *     is true.
             */
            filter?: components["schemas"]["FilterRequest"];
            /**
             * Format: int32
             * @description Tasks acted on per second, at most (1–1000; default 100). The calls a retry or
             *     release brings about keep to the destination's limits besides.
             */
            per_second?: number | null;
        };
        /** @description One check of a held task. */
        CheckView: {
            /** Format: date-time */
            at: string;
            /** @description `release` or `cancel`, if the answer decided. */
            decision?: string | null;
            /** Format: int64 */
            duration_ms: number;
            error?: string | null;
            /** Format: int32 */
            number: number;
            /** Format: int32 */
            status_code?: number | null;
        };
        /**
         * @description What the window holds now: one entry per minute, oldest first, and the hour's
         *     lateness percentiles.
         */
        DeliveryWindowView: {
            /**
             * Format: int64
             * @description Of every attempt in the window (`null` without attempts): the upper bound of the
             *     lateness bucket the percentile falls in.
             */
            lateness_p50_ms?: number | null;
            /** Format: int64 */
            lateness_p99_ms?: number | null;
            minutes: components["schemas"]["MinuteView"][];
        };
        /**
         * @description A destination to open or close by hand.
         * @example {
         *       "destination": "https://hooks.example.com"
         *     }
         */
        DestinationRequest: {
            /** @description A URL of the destination (its scheme, host and port are what count). */
            destination: string;
        };
        /**
         * @description One destination (scheme, host and port) of yours, now.
         * @example {
         *       "destination": "https://hooks.example.com",
         *       "in_flight": 16,
         *       "limit": 16,
         *       "paused_until": null,
         *       "waiting": 240
         *     }
         */
        DestinationView: {
            destination: string;
            in_flight: number;
            /** @description The most calls in flight to it at once (yours, else the server's). */
            limit: number;
            /**
             * Format: date-time
             * @description It answered 429 or 503 with `Retry-After`: nothing is sent to it until then.
             */
            paused_until?: string | null;
            /** @description Deliveries waiting for one of its slots. */
            waiting: number;
        };
        /** @description Which tasks a bulk action takes. */
        FilterRequest: {
            /** @description A URL of the destination: tasks to the same scheme, host and port. */
            destination?: string | null;
            ended?: components["schemas"]["BetweenRequest"] | null;
            /**
             * @description How the last attempt failed: `http`, `body_mismatch`, `timeout`, `transport` or
             *     `refused`.
             */
            error_class?: string | null;
            flow_key?: string | null;
            /** @description The task's business key. */
            key?: string | null;
            /**
             * Format: int32
             * @description The last attempt was answered with this HTTP status code.
             */
            last_status?: number | null;
            /** @description Each of these metadata entries, exactly. */
            metadata?: {
                [key: string]: string;
            };
            registered?: components["schemas"]["BetweenRequest"] | null;
            /** @description The id of the schedule whose occurrence the task is. */
            schedule?: string | null;
            /** @description Only tasks in these states (each one the action takes). */
            statuses?: string[];
            /** @description The task's URL, exactly. */
            url?: string | null;
            /** @description The task's URL begins with this. */
            url_prefix?: string | null;
        };
        /**
         * @description `flow`: the flow key whose limits the task shares.
         * @example {
         *       "key": "partner-api",
         *       "parallelism": 3,
         *       "period": "1s",
         *       "rate": 50
         *     }
         */
        FlowRequest: {
            /**
             * @description The flow's name (per tenant): 1–255 bytes, no control characters.
             * @example partner-api
             */
            key: string;
            /**
             * Format: int32
             * @description The most tasks of the flow in flight at once (1–1000).
             * @example 3
             */
            parallelism?: number | null;
            /**
             * @description The window `rate` counts in (1s to 24h; default 1s).
             * @example 1s
             */
            period?: string | null;
            /**
             * Format: int32
             * @description The most tasks of the flow started per `period` (1–100000).
             * @example 50
             */
            rate?: number | null;
        };
        /**
         * @description One flow of the tenant, now.
         * @example {
         *       "in_flight": 3,
         *       "key": "partner-api",
         *       "paused": false,
         *       "waiting": 120
         *     }
         */
        FlowStateView: {
            /**
             * Format: int64
             * @description Calls holding one of its parallelism slots.
             */
            in_flight: number;
            key: string;
            /** @description Its tasks wait until it is resumed. */
            paused: boolean;
            /**
             * Format: int64
             * @description Tasks put off by its rate, its parallelism or its pause, and not yet due again.
             */
            waiting: number;
        };
        /** @description A task's flow: its key and limits. */
        FlowView: {
            key: string;
            /** Format: int32 */
            parallelism?: number | null;
            period: string;
            /** Format: int32 */
            rate?: number | null;
        };
        FlowsView: {
            /** @description The flows that are paused, or have tasks waiting or calls in flight, by key. */
            flows: components["schemas"]["FlowStateView"][];
        };
        /** @description What `/healthz` and `/readyz` answer. */
        Health: {
            /** @example ok */
            status: string;
        };
        /** @description `hold`: register the task held until the caller releases it (or a check decides). */
        HoldRequest: {
            /**
             * @description Asked, signed, whether to release or cancel the task once the hold times out.
             *     It answers `200 {"decision": "release"}` or `{"decision": "cancel"}`; 404 and 410
             *     mean cancel.
             * @example https://example.com/orders/42/committed
             */
            check_url?: string | null;
            /**
             * Format: int32
             * @description How many times the check URL is asked (1–100; default 20).
             */
            max_checks?: number | null;
            on_unknown?: components["schemas"]["OnUnknown"] | null;
            /**
             * @description How long the task may stay held (1s to 24h) before its `check_url` is asked, or,
             *     without one, `on_unknown` applies.
             * @example 5m
             */
            timeout: string;
        };
        HoldView: {
            check_url?: string | null;
            /** Format: int32 */
            max_checks: number;
            on_unknown: components["schemas"]["OnUnknown"];
            timeout: string;
        };
        /** @description What `DELETE /v1/tasks?key=…` did. */
        KeyCancelView: {
            /** @description The tasks it canceled. */
            canceled: string[];
            key: string;
            /** @description More tasks have the key than one request handles: send it again. */
            more: boolean;
            /** @description The tasks with the key it could not cancel: being delivered, or finished. */
            not_canceled: components["schemas"]["KeyedStatusView"][];
        };
        /** @description What `POST /v1/tasks/release?key=…` did. */
        KeyReleaseView: {
            key: string;
            more: boolean;
            /** @description The tasks with the key that were not held, with their status. */
            not_released: components["schemas"]["KeyedStatusView"][];
            released: string[];
        };
        /** @description A task with the key that an action by key left as it was. */
        KeyedStatusView: {
            id: string;
            status: components["schemas"]["Status"];
        };
        MinuteView: {
            /**
             * Format: date-time
             * @description The minute's start.
             */
            at: string;
            /** Format: int64 */
            attempts: number;
            /**
             * Format: int64
             * @description Attempts that failed, whether retried or final.
             */
            failed: number;
            /** Format: int64 */
            lateness_p50_ms?: number | null;
            /** Format: int64 */
            lateness_p99_ms?: number | null;
            /** Format: int64 */
            succeeded: number;
        };
        /** @enum {string} */
        Notify: "final" | "every" | "never";
        /** @enum {string} */
        OnUnknown: "cancel" | "release";
        /** @description The head of a key's line. */
        OrderHeadView: {
            /** @description It failed for good and holds the key until it is retried or canceled. */
            blocked: boolean;
            /** Format: int64 */
            place: number;
            /**
             * Format: date-time
             * @description When it took its place.
             */
            since: string;
            /** @description The task's status (`unknown` while its registration is being written). */
            status: string;
            task_id: string;
        };
        /**
         * @description A key's line: the task whose turn it is, and how many tasks hold a place.
         * @example {
         *       "backlog": 3,
         *       "head": {
         *         "blocked": true,
         *         "place": 7,
         *         "since": "2030-01-01T09:00:00Z",
         *         "status": "failed",
         *         "task_id": "01JD2W9Q5Z4T8M3X6V7B0C1N2P"
         *       },
         *       "key": "order-42"
         *     }
         */
        OrderKeyView: {
            /**
             * Format: int64
             * @description Tasks holding a place: the head and those waiting behind it.
             */
            backlog: number;
            head?: components["schemas"]["OrderHeadView"] | null;
            key: string;
        };
        /** @description A page of keys, in key order; pass `next_cursor` as `after` for the next. */
        OrderKeysView: {
            keys: components["schemas"]["OrderKeyView"][];
            next_cursor?: string | null;
        };
        /**
         * @description A task's order key: delivered one at a time, in registration order, with the tasks of
         *     the same key.
         */
        OrderView: {
            key: string;
            /** @description `block` or `skip`: what the key does if this task fails for good. */
            on_failure: string;
            /**
             * Format: int64
             * @description Its place in the key's line (places given later are greater).
             */
            place: number;
        };
        PageView: {
            next_cursor?: string | null;
            tasks: components["schemas"]["TaskView"][];
        };
        PoliciesView: {
            policies: components["schemas"]["PolicyView"][];
        };
        /**
         * @description A named policy: a retry policy, and optionally the flow its tasks share.
         * @example {
         *       "backoff": "exponential",
         *       "flow": {
         *         "key": "partner-api",
         *         "parallelism": 3,
         *         "rate": 50
         *       },
         *       "interval": "30s",
         *       "max_attempts": 10,
         *       "max_interval": "1h"
         *     }
         */
        PolicyRequest: components["schemas"]["RetryRequest"] & {
            flow?: components["schemas"]["FlowRequest"] | null;
        };
        PolicyView: {
            flow?: components["schemas"]["FlowView"] | null;
            name: string;
            retry: components["schemas"]["RetryView"];
        };
        Problem: {
            /** @description What happened, for people. */
            detail: string;
            /** @description The request field at fault, as a path (`retry.schedule[2]`). */
            field?: string | null;
            /**
             * Format: int32
             * @description The response's HTTP status.
             */
            status: number;
            title: string;
            /** @description What kind of problem (`urn:boomerang:problem:invalid-field`); stable, for code. */
            type: string;
        };
        /** @description A job's counts so far (its report once finished). */
        ProgressView: {
            /**
             * Format: int64
             * @description Tasks the action was done to.
             */
            done: number;
            /**
             * Format: int64
             * @description Of those, the ones the filter took.
             */
            matched: number;
            /**
             * Format: int64
             * @description Tasks read so far.
             */
            read: number;
            /**
             * Format: int64
             * @description Tasks that had moved on when their turn came (delivered, canceled meanwhile…).
             */
            skipped: number;
        };
        /** @description A task's `retry`: a policy of its own, or the name of one of the tenant's policies. */
        RetryField: string | components["schemas"]["RetryRequest"];
        /**
         * @description A retry policy: a fixed `schedule` of waits, or a `backoff` rule.
         * @example {
         *       "backoff": "exponential",
         *       "interval": "30s",
         *       "max_attempts": 10,
         *       "max_interval": "1h"
         *     }
         */
        RetryRequest: {
            /** @description `fixed`, `linear` or `exponential`, with `interval`. Not with `schedule`. */
            backoff?: string | null;
            /** @description The first wait (1s to 7days). */
            interval?: string | null;
            /**
             * Format: double
             * @description Each wait is moved by up to this fraction of itself, at random (0 to 0.5).
             */
            jitter?: number | null;
            /**
             * Format: int32
             * @description The most attempts (1–1000), the first included. Absent: the schedule's length plus
             *     one, or 8 with `backoff`; `null`: as many as fit in `max_duration`.
             */
            max_attempts?: number | null;
            /**
             * @description Give up once this long has passed since the first attempt (1s to 365days; at most
             *     30days when `max_attempts` is null, and then required).
             */
            max_duration?: string | null;
            /** @description The longest wait (1s to 7days; default 1h, or `interval` if longer). */
            max_interval?: string | null;
            /**
             * @description Response statuses (300–599) that fail the task at once, without retrying
             * @example [
             *       400,
             *       401,
             *       403,
             *       404,
             *       410
             *     ]
             */
            permanent_statuses?: number[] | null;
            /**
             * @description The waits before each retry (1–100 of them, each 1s to 7days).
             * @example [
             *       "30s",
             *       "2m",
             *       "10m"
             *     ]
             */
            schedule?: string[] | null;
        };
        RetryView: {
            backoff?: string | null;
            interval?: string | null;
            /** Format: double */
            jitter: number;
            /**
             * Format: int32
             * @description `null`: as many as fit in `max_duration`.
             */
            max_attempts?: number | null;
            max_duration?: string | null;
            max_interval?: string | null;
            permanent_statuses: number[];
            schedule?: string[] | null;
        };
        /**
         * @description A rotation: a new secret signs every delivery from now on, next to the ones in force.
         * @example {
         *       "grace_period": "24h"
         *     }
         */
        RotationRequest: {
            /**
             * @description How long the secrets in force now go on signing deliveries beside the new one
             *     (0s to 30d; default 24h): the time your receivers have to switch.
             * @example 24h
             */
            grace_period?: string | null;
        };
        ScheduleListView: {
            /** @description Send as `cursor` for the next page; absent on the last. */
            next_cursor?: string | null;
            schedules: components["schemas"]["ScheduleView"][];
        };
        /** @description A schedule's own fields (`cron` or `every`, `timezone`, `start_at`, `end_at`, `catch_up`) and the fields of the task each occurrence is. */
        ScheduleRequest: {
            /**
             * @description The body to send (at most 256 KiB): a string is sent as it is (`text/plain`), any
             *     other JSON value as JSON (`application/json`), unless `headers` names a type.
             */
            body?: unknown;
            /**
             * @description `one` (default): an occurrence missed while the server was down fires once, late;
             *     `none`: it is skipped. Either way the schedule goes on from the next slot.
             */
            catch_up?: string | null;
            /**
             * @description A cron pattern: five fields (minute hour day month weekday), or six with seconds
             *     first; `L`, `#`, `W`, names and `@daily`-style nicknames are understood. Not with
             *     `every`.
             * @example 0 9 * * MON-FRI
             */
            cron?: string | null;
            /**
             * Format: date-time
             * @description No occurrence after this (RFC 3339).
             */
            end_at?: string | null;
            /**
             * @description A fixed interval instead of `cron` (at least 1s), counted from `start_at`.
             * @example 15m
             */
            every?: string | null;
            /** @description An attempt succeeds only if the response body is exactly this text (at most 4 KiB). */
            expect_body?: string | null;
            flow?: components["schemas"]["FlowRequest"] | null;
            /** @description Headers to send, at most 50; values are never shown again */
            headers?: {
                [key: string]: string;
            } | null;
            /**
             * @description The caller's own id for the task (not unique): tasks are listed, canceled and
             *     released by it. 1–255 bytes, no control characters.
             * @example order-42
             */
            key?: string | null;
            /** @description Labels kept with the task and sent with its alerts (at most 50; keys 1–64 bytes, values up to 1 KiB) */
            metadata?: {
                [key: string]: string;
            } | null;
            /**
             * @description `POST` (the default), `PUT`, `PATCH`, `DELETE` or `GET`, in any case.
             * @example POST
             */
            method?: string | null;
            notify?: components["schemas"]["Notify"] | null;
            on_failure?: components["schemas"]["AlertRequest"] | null;
            on_success?: components["schemas"]["AlertRequest"] | null;
            /**
             * @description Tasks with the same `order_key` are delivered one at a time, in the order they were
             *     registered: a task waits while an earlier one of its key is held, scheduled,
             *     being delivered or retrying (1 to 255 bytes).
             * @example order-42
             */
            order_key?: string | null;
            /**
             * @description With `order_key`, what the key does if this task fails for good: `block` (default)
             *     waits until it is retried or canceled; `skip` goes on without it.
             * @example block
             */
            order_on_failure?: string | null;
            retry?: components["schemas"]["RetryField"] | null;
            /**
             * Format: date-time
             * @description No occurrence before this (RFC 3339; default now).
             */
            start_at?: string | null;
            /**
             * @description A template of the tenant's (`PUT /v1/templates/{name}`) whose settings this task
             *     takes where it gives none; absent: the tenant's `default` template, if it has one.
             * @example billing
             */
            template?: string | null;
            /**
             * @description How long one attempt may take (1s to 60s; default 10s).
             * @example 10s
             */
            timeout?: string | null;
            /**
             * @description The IANA time zone `cron` is read in (default `UTC`).
             * @example Europe/Paris
             */
            timezone?: string | null;
            /**
             * @description Where to send the callback: an `https://` URL (`http://` and private addresses only
             *     with `serve --dev` or `--allow-cidr`).
             * @example https://example.com/hooks/order-shipped
             */
            url: string;
        };
        /** @description A schedule as the API shows it. */
        ScheduleView: {
            /** @description `one` or `none`. */
            catch_up: string;
            /** Format: date-time */
            created_at: string;
            cron?: string | null;
            /** Format: date-time */
            end_at?: string | null;
            /**
             * Format: int64
             * @description The interval of an `every` schedule, in milliseconds.
             */
            every_ms?: number | null;
            id: string;
            key?: string | null;
            method: string;
            /**
             * Format: date-time
             * @description When the next occurrence is due (none while paused or past the end).
             */
            next_at?: string | null;
            /** Format: date-time */
            start_at: string;
            /** @description `active` or `paused`. */
            state: string;
            timezone?: string | null;
            /** Format: date-time */
            updated_at: string;
            /** @description What each occurrence calls. */
            url: string;
        };
        /**
         * @description One signing secret in force.
         * @example {
         *       "created_at": "2030-01-01T09:00:00Z",
         *       "expires_at": null,
         *       "id": "3f2a9c0d1e4b5a67",
         *       "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
         *     }
         */
        SigningSecretView: {
            /**
             * Format: date-time
             * @description When it was added (`null` for a first secret kept from before rotation existed).
             */
            created_at?: string | null;
            /**
             * Format: date-time
             * @description When it stops signing deliveries (`null`: the newest, which never expires).
             */
            expires_at?: string | null;
            /** @description Names the secret (to retire it) without showing it. */
            id: string;
            /** @description The secret, as Standard Webhooks libraries take it. */
            secret: string;
        };
        /** @description The secrets in force, newest first: every delivery carries one signature from each. */
        SigningSecretsView: {
            secrets: components["schemas"]["SigningSecretView"][];
        };
        StatsView: {
            /**
             * @description Tasks by state, every state named; `null` where the store cannot count them
             *     cheaply (DynamoDB, on AWS).
             * @example {
             *       "canceled": 5,
             *       "delivering": 1,
             *       "failed": 2,
             *       "held": 0,
             *       "scheduled": 12,
             *       "succeeded": 340
             *     }
             */
            counts?: {
                [key: string]: number;
            } | null;
            deliveries?: components["schemas"]["DeliveryWindowView"] | null;
            /**
             * @description Your destinations with calls in flight or waiting, or paused, by destination;
             *     `null` where the server keeps no such figures (the Lambdas).
             */
            destinations?: components["schemas"]["DestinationView"][] | null;
            /**
             * @description Your destinations whose circuit breaker is open: nothing but its probe is sent
             *     to them.
             */
            open_breakers?: components["schemas"]["BreakerView"][];
        };
        /** @enum {string} */
        Status: "held" | "scheduled" | "delivering" | "succeeded" | "failed" | "canceled";
        /**
         * @description A callback to register. Only `url` is required: by default it is called at once with
         *     `POST`, no body, a 10 s timeout, and the default retry policy.
         * @example {
         *       "body": {
         *         "order": 42
         *       },
         *       "delay": "90s",
         *       "headers": {
         *         "x-tenant": "acme"
         *       },
         *       "key": "order-42",
         *       "metadata": {
         *         "source": "checkout"
         *       },
         *       "retry": {
         *         "schedule": [
         *           "30s",
         *           "2m",
         *           "10m"
         *         ]
         *       },
         *       "url": "https://example.com/hooks/order-shipped"
         *     }
         */
        TaskRequest: {
            /**
             * @description The body to send (at most 256 KiB): a string is sent as it is (`text/plain`), any
             *     other JSON value as JSON (`application/json`), unless `headers` names a type.
             */
            body?: unknown;
            /**
             * @description How long from now to call (0s to 365days); the default is now. Not with `fire_at`.
             * @example 90s
             */
            delay?: string | null;
            /** @description An attempt succeeds only if the response body is exactly this text (at most 4 KiB). */
            expect_body?: string | null;
            /**
             * Format: date-time
             * @description When to call (RFC 3339), within 365 days. Not with `delay`.
             * @example 2030-01-01T09:00:00Z
             */
            fire_at?: string | null;
            flow?: components["schemas"]["FlowRequest"] | null;
            /** @description Headers to send, at most 50; values are never shown again */
            headers?: {
                [key: string]: string;
            } | null;
            hold?: components["schemas"]["HoldRequest"] | null;
            /**
             * @description Registers the task at most once: a repeat with the same key and request answers the
             *     task registered first (200). Same as the `Idempotency-Key` header.
             * @example order-42-reminder
             */
            idempotency_key?: string | null;
            /**
             * @description The caller's own id for the task (not unique): tasks are listed, canceled and
             *     released by it. 1–255 bytes, no control characters.
             * @example order-42
             */
            key?: string | null;
            /**
             * @description With `on_key: replace`: the replaced task fires at most this long after the first
             *     registration it replaced (1s to 365days), however often it is replaced.
             * @example 2m
             */
            max_delay?: string | null;
            /** @description Labels kept with the task and sent with its alerts (at most 50; keys 1–64 bytes, values up to 1 KiB) */
            metadata?: {
                [key: string]: string;
            } | null;
            /**
             * @description `POST` (the default), `PUT`, `PATCH`, `DELETE` or `GET`, in any case.
             * @example POST
             */
            method?: string | null;
            notify?: components["schemas"]["Notify"] | null;
            on_failure?: components["schemas"]["AlertRequest"] | null;
            /**
             * @description `replace`: a task registered before under the same `key` with `replace`, none of
             *     whose attempts has begun, is replaced by this one (its body, headers and fire time;
             *     answered 200 with that task) instead of adding one. Once an attempt of it has
             *     begun, this registration makes a new task. Needs `key`; not in a batch.
             * @example replace
             */
            on_key?: string | null;
            on_success?: components["schemas"]["AlertRequest"] | null;
            /**
             * @description Tasks with the same `order_key` are delivered one at a time, in the order they were
             *     registered: a task waits while an earlier one of its key is held, scheduled,
             *     being delivered or retrying (1 to 255 bytes).
             * @example order-42
             */
            order_key?: string | null;
            /**
             * @description With `order_key`, what the key does if this task fails for good: `block` (default)
             *     waits until it is retried or canceled; `skip` goes on without it.
             * @example block
             */
            order_on_failure?: string | null;
            retry?: components["schemas"]["RetryField"] | null;
            /**
             * @description A template of the tenant's (`PUT /v1/templates/{name}`) whose settings this task
             *     takes where it gives none; absent: the tenant's `default` template, if it has one.
             * @example billing
             */
            template?: string | null;
            /**
             * @description How long one attempt may take (1s to 60s; default 10s).
             * @example 10s
             */
            timeout?: string | null;
            /**
             * @description Where to send the callback: an `https://` URL (`http://` and private addresses only
             *     with `serve --dev` or `--allow-cidr`).
             * @example https://example.com/hooks/order-shipped
             */
            url: string;
        };
        TaskView: {
            /** @description On an alert: the task it reports on. */
            alert_of?: string | null;
            /** @description The task failed and its alert is not yet registered (it will be). */
            alert_pending?: boolean;
            /** @description The alerts raised about this task, oldest first. */
            alerts?: string[];
            /**
             * Format: int32
             * @description The current (or last) attempt number.
             */
            attempt: number;
            attempts?: components["schemas"]["AttemptView"][] | null;
            body_bytes: number;
            /** @description The body's first 200 characters, in a task's own view (`GET /v1/tasks/{id}`). */
            body_preview?: string | null;
            /**
             * Format: date-time
             * @description While held: when the hold times out, or the next check is due.
             */
            check_at?: string | null;
            /** @description The checks made while held, in order. */
            checks?: components["schemas"]["CheckView"][];
            /** Format: date-time */
            created_at: string;
            expect_body?: string | null;
            flow?: components["schemas"]["FlowView"] | null;
            header_names: string[];
            hold?: components["schemas"]["HoldView"] | null;
            id: string;
            idempotency_key?: string | null;
            key?: string | null;
            last_error?: string | null;
            metadata: {
                [key: string]: string;
            };
            method: string;
            /** Format: date-time */
            next_attempt_at?: string | null;
            notify: components["schemas"]["Notify"];
            on_failure?: components["schemas"]["AlertView"] | null;
            on_success?: components["schemas"]["AlertView"] | null;
            order?: components["schemas"]["OrderView"] | null;
            retry: components["schemas"]["RetryView"];
            /** @description Set on a schedule's occurrence: its schedule. */
            schedule_id?: string | null;
            status: components["schemas"]["Status"];
            timeout: string;
            /** Format: date-time */
            updated_at: string;
            url: string;
        };
        /**
         * @description A task template: the settings its tasks take unless they give their own. Tasks
         *     registered after a change take the template as changed; those registered before keep
         *     what they were registered with.
         * @example {
         *       "expect_body": "success",
         *       "headers": {
         *         "x-team": "billing"
         *       },
         *       "on_failure": {
         *         "url": "https://example.com/hooks/boomerang-alerts"
         *       },
         *       "retry": "payments",
         *       "timeout": "5s",
         *       "url_base": "https://example.com/hooks"
         *     }
         */
        TemplateRequest: {
            /** @description The tenant's rule for what a successful receiver answers (`"success"`). */
            expect_body?: string | null;
            flow?: components["schemas"]["FlowRequest"] | null;
            /** @description Headers to send, at most 50; values are never shown again */
            headers?: {
                [key: string]: string;
            } | null;
            method?: string | null;
            notify?: components["schemas"]["Notify"] | null;
            on_failure?: components["schemas"]["AlertRequest"] | null;
            on_success?: components["schemas"]["AlertRequest"] | null;
            retry?: components["schemas"]["RetryField"] | null;
            /** @example 5s */
            timeout?: string | null;
            /** @description The URL of a task that gives none. Not with `url_base`. */
            url?: string | null;
            /**
             * @description What a task's relative `url` (`/orders/42`) is appended to. Not with `url`.
             * @example https://example.com/hooks
             */
            url_base?: string | null;
        };
        TemplateView: {
            /** @description The names of the headers its tasks send. */
            header_names: string[];
            name: string;
            /** @description The template's fields, without header values. */
            settings: components["schemas"]["TemplateRequest"];
        };
        TemplatesView: {
            templates: components["schemas"]["TemplateView"][];
        };
    };
    responses: {
        /** @description The query string cannot be read: a parameter is given twice. */
        BadQuery: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "detail": "Failed to deserialize query string: duplicate field `key`",
                 *       "status": 400,
                 *       "title": "The query string cannot be read",
                 *       "type": "urn:boomerang:problem:malformed-query"
                 *     }
                 */
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
        /** @description The task's state does not allow this (a canceled task cannot be released). */
        Conflict: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "detail": "the task is canceled; only a held task can be released",
                 *       "status": 409,
                 *       "title": "The resource is not in a state that allows this",
                 *       "type": "urn:boomerang:problem:conflict"
                 *     }
                 */
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
        /** @description A field breaks a rule; `field` names it (`retry.schedule[2]`). */
        Invalid: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "detail": "delay: must be between 0s and 365days",
                 *       "field": "delay",
                 *       "status": 422,
                 *       "title": "A field is invalid",
                 *       "type": "urn:boomerang:problem:invalid-field"
                 *     }
                 */
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
        /** @description The body is not JSON, or has more than one JSON value. */
        Malformed: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "detail": "expected value at line 1 column 1",
                 *       "status": 400,
                 *       "title": "The request body is not valid JSON",
                 *       "type": "urn:boomerang:problem:malformed-json"
                 *     }
                 */
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
        /** @description No such task (or policy) for this API key. */
        NotFound: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "detail": "no such task",
                 *       "status": 404,
                 *       "title": "Not found",
                 *       "type": "urn:boomerang:problem:not-found"
                 *     }
                 */
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
        /** @description The request body is larger than 1 MiB, or a task's body larger than 256 KiB. */
        TooLarge: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "detail": "requests must be at most 1024 KiB",
                 *       "field": "body",
                 *       "status": 413,
                 *       "title": "The request is too large",
                 *       "type": "urn:boomerang:problem:too-large"
                 *     }
                 */
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
        /** @description Over one of your limits (requests a second, or unfinished tasks); nothing was done: try again after `Retry-After` seconds. */
        TooMany: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "detail": "more than 5000 requests a second for this tenant",
                 *       "status": 429,
                 *       "title": "Over a limit of yours; try again later",
                 *       "type": "urn:boomerang:problem:too-many-requests"
                 *     }
                 */
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
        /** @description No API key, or not a valid one. */
        Unauthorized: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "detail": "send `Authorization: Bearer <api key>`",
                 *       "status": 401,
                 *       "title": "Missing or invalid API key",
                 *       "type": "urn:boomerang:problem:unauthorized"
                 *     }
                 */
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
        /** @description The store cannot be reached; nothing was done: send the request again after `Retry-After` seconds. */
        Unavailable: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "detail": "the task store is unavailable",
                 *       "status": 503,
                 *       "title": "Temporarily unavailable; retry the request",
                 *       "type": "urn:boomerang:problem:unavailable"
                 *     }
                 */
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
        /** @description A check fails (the store takes no write, the disk is nearly full, the timer stalled); `detail` names each. */
        Unready: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "detail": "not ready: disk: 12 MiB free in the data directory, under the 64 MiB needed",
                 *       "status": 503,
                 *       "title": "Temporarily unavailable; retry the request",
                 *       "type": "urn:boomerang:problem:unavailable"
                 *     }
                 */
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
    };
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    console: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The console's page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html; charset=utf-8": string;
                };
            };
        };
    };
    console_file: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description `console.js` or `console.css`.
                 * @example console.js
                 */
                file: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The file */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/javascript; charset=utf-8": string;
                    "text/css; charset=utf-8": string;
                };
            };
            404: components["responses"]["NotFound"];
        };
    };
    healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The server is up */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The metrics */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/openmetrics-text; version=1.0.0; charset=utf-8": string;
                };
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    openapi: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description This OpenAPI 3.1 document */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, never>;
                };
            };
        };
    };
    readyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            503: components["responses"]["Unready"];
        };
    };
    list_breakers: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The settings and the open breakers */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BreakersView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    close_breaker: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DestinationRequest"];
            };
        };
        responses: {
            /** @description The breaker, closed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BreakerView"];
                };
            };
            400: components["responses"]["Malformed"];
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["TooLarge"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    open_breaker: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DestinationRequest"];
            };
        };
        responses: {
            /** @description The breaker, open */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BreakerView"];
                };
            };
            400: components["responses"]["Malformed"];
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["TooLarge"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    put_breaker_settings: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BreakerSettingsRequest"];
            };
        };
        responses: {
            /** @description The settings as they apply */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BreakerSettingsView"];
                };
            };
            400: components["responses"]["Malformed"];
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["TooLarge"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    list_bulk_jobs: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The jobs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkJobsView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    get_bulk_job: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The job's id (a ULID).
                 * @example 01JD0Q5ZQ7N0Z8B6W4Y3X2V1TS
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The job */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkJobView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    list_flows: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The flows, by key */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FlowsView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    get_flow: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The flow's key: 1–255 bytes, no control characters.
                 * @example partner-api
                 */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The flow */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FlowStateView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    pause_flow: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The flow's key: 1–255 bytes, no control characters.
                 * @example partner-api
                 */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The flow, paused */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FlowStateView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    resume_flow: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The flow's key: 1–255 bytes, no control characters.
                 * @example partner-api
                 */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The flow, running */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FlowStateView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    list_order_keys: {
        parameters: {
            query?: {
                /** @description The keys after this one (the previous page's `next_cursor`). */
                after?: string;
                /** @description 1–100 (default 50). */
                limit?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of keys */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrderKeysView"];
                };
            };
            400: components["responses"]["BadQuery"];
            401: components["responses"]["Unauthorized"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    get_order_key: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The key: 1–255 bytes, no control characters.
                 * @example order-42
                 */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The key */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OrderKeyView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    list_policies: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The policies, by name */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PoliciesView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    get_policy: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description 1 to 64 letters, digits, `.`, `_` or `-`; `default` replaces the built-in default.
                 * @example payments
                 */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The policy */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PolicyView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    put_policy: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description 1 to 64 letters, digits, `.`, `_` or `-`; `default` replaces the built-in default.
                 * @example payments
                 */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PolicyRequest"];
            };
        };
        responses: {
            /** @description The policy as stored */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PolicyView"];
                };
            };
            400: components["responses"]["Malformed"];
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["TooLarge"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    delete_policy: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description 1 to 64 letters, digits, `.`, `_` or `-`; `default` replaces the built-in default.
                 * @example payments
                 */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    list_schedules: {
        parameters: {
            query?: {
                /** @description At most this many (1–100, default 50). */
                limit?: number;
                /** @description A previous page's `next_cursor`. */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of schedules */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleListView"];
                };
            };
            400: components["responses"]["BadQuery"];
            401: components["responses"]["Unauthorized"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    create_schedule: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "body": {
                 *         "report": "daily"
                 *       },
                 *       "cron": "0 9 * * MON-FRI",
                 *       "timezone": "Europe/Paris",
                 *       "url": "https://example.com/hooks/daily-report"
                 *     }
                 */
                "application/json": components["schemas"]["ScheduleRequest"];
            };
        };
        responses: {
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleView"];
                };
            };
            400: components["responses"]["Malformed"];
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["TooLarge"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    get_schedule: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The schedule's id (a ULID).
                 * @example 01JD0Q5ZQ7N0Z8B6W4Y3X2V1TS
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The schedule */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    delete_schedule: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The schedule's id (a ULID).
                 * @example 01JD0Q5ZQ7N0Z8B6W4Y3X2V1TS
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    pause_schedule: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The schedule's id (a ULID).
                 * @example 01JD0Q5ZQ7N0Z8B6W4Y3X2V1TS
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Paused */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            409: components["responses"]["Conflict"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    resume_schedule: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The schedule's id (a ULID).
                 * @example 01JD0Q5ZQ7N0Z8B6W4Y3X2V1TS
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Resumed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            409: components["responses"]["Conflict"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    list_signing_secrets: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The secrets in force */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SigningSecretsView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    rotate_signing_secret: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["RotationRequest"] | null;
            };
        };
        responses: {
            /** @description The secrets in force, the new one first */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SigningSecretsView"];
                };
            };
            400: components["responses"]["Malformed"];
            401: components["responses"]["Unauthorized"];
            409: components["responses"]["Conflict"];
            413: components["responses"]["TooLarge"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    retire_signing_secret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The secret's id (16 hexadecimal digits).
                 * @example 3f2a9c0d1e4b5a67
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The secrets left in force */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SigningSecretsView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    stats: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The figures */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StatsView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    list_tasks: {
        parameters: {
            query?: {
                /** @description Only tasks in this state. */
                status?: components["schemas"]["Status"];
                /** @description Only tasks with this business key. */
                key?: string;
                /** @description Tasks per page (1–100; default 20). */
                limit?: number;
                /** @description `next_cursor` of the previous page. */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of tasks */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PageView"];
                };
            };
            400: components["responses"]["BadQuery"];
            401: components["responses"]["Unauthorized"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    create_task: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Registers the task at most once: a repeat with the same key and request answers the
                 *     task registered first (200). Same as the `idempotency_key` field; visible ASCII.
                 */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TaskRequest"];
            };
        };
        responses: {
            /** @description Registered before with this idempotency key and request */
            200: {
                headers: {
                    /** @description The task's URL */
                    Location?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            /** @description Registered */
            201: {
                headers: {
                    /** @description The task's URL */
                    Location?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            400: components["responses"]["Malformed"];
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["TooLarge"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    cancel_by_key: {
        parameters: {
            query: {
                /** @description The business key of the tasks to act on. */
                key: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description What was canceled, and what could not be */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyCancelView"];
                };
            };
            400: components["responses"]["BadQuery"];
            401: components["responses"]["Unauthorized"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    create_tasks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BatchRequest"];
            };
        };
        responses: {
            /** @description One result per task, in order */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BatchView"];
                };
            };
            400: components["responses"]["Malformed"];
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["TooLarge"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    bulk_action: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BulkRequest"];
            };
        };
        responses: {
            /** @description The preview (`dry_run`): nothing was changed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkPreviewView"];
                };
            };
            /** @description The job, started */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkJobView"];
                };
            };
            400: components["responses"]["Malformed"];
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["TooLarge"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    release_by_key: {
        parameters: {
            query: {
                /** @description The business key of the tasks to act on. */
                key: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description What was released, and what was not held */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyReleaseView"];
                };
            };
            400: components["responses"]["BadQuery"];
            401: components["responses"]["Unauthorized"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    get_task: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The task's id, a ULID (`01JD2W9Q5Z4T8M3X6V7B0C1N2P`). */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The task and its attempts, oldest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    cancel_task: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The task's id, a ULID (`01JD2W9Q5Z4T8M3X6V7B0C1N2P`). */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Canceled */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            409: components["responses"]["Conflict"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    release_task: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The task's id, a ULID (`01JD2W9Q5Z4T8M3X6V7B0C1N2P`). */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Released (or released before) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            409: components["responses"]["Conflict"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    retry_task: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The task's id, a ULID (`01JD2W9Q5Z4T8M3X6V7B0C1N2P`). */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Scheduled again */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            409: components["responses"]["Conflict"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    list_templates: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The templates, by name */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TemplatesView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    get_template: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description 1 to 64 letters, digits, `.`, `_` or `-`; `default` replaces the built-in default.
                 * @example payments
                 */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The template */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TemplateView"];
                };
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    put_template: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description 1 to 64 letters, digits, `.`, `_` or `-`; `default` replaces the built-in default.
                 * @example payments
                 */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TemplateRequest"];
            };
        };
        responses: {
            /** @description The template as stored */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TemplateView"];
                };
            };
            400: components["responses"]["Malformed"];
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["TooLarge"];
            422: components["responses"]["Invalid"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
    delete_template: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description 1 to 64 letters, digits, `.`, `_` or `-`; `default` replaces the built-in default.
                 * @example payments
                 */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooMany"];
            503: components["responses"]["Unavailable"];
        };
    };
}
