-- Tasks and their attempts, the keys of replaceable tasks, the servers sharing the work,
-- dead letters and the readiness probe's row. Ids (ULIDs) and tenants compare bytewise
-- (COLLATE "C") whatever the database's collation: lists page in id order.

CREATE TABLE tasks (
    id text COLLATE "C" PRIMARY KEY,
    tenant text COLLATE "C" NOT NULL,
    status text NOT NULL,
    version bigint NOT NULL,
    -- The attempt the pending work's timer carries (0 for a held task's check).
    attempt integer NOT NULL,
    idempotency_key text,
    -- The task's pending work: what it is and when it is due (NULL: nothing to do).
    due_kind text,
    due_ms bigint,
    business_key text COLLATE "C",
    -- When a finished task ended (NULL while it has anything left to do).
    finished_ms bigint,
    -- The server that holds the pending work in its timer (NULL: no server yet).
    owner text,
    doc text NOT NULL
);
CREATE UNIQUE INDEX tasks_idempotency ON tasks (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX tasks_by_tenant ON tasks (tenant, id);
CREATE INDEX tasks_by_tenant_status ON tasks (tenant, status, id);
CREATE INDEX tasks_by_key ON tasks (tenant, business_key, id) WHERE business_key IS NOT NULL;
-- What the loaders lease: pending work no server holds, by due time.
CREATE INDEX tasks_unowned_due ON tasks (due_ms) WHERE owner IS NULL AND due_ms IS NOT NULL;
-- Each server's own work, for its repair pass and for a take-over.
CREATE INDEX tasks_owned ON tasks (owner, due_ms) WHERE owner IS NOT NULL;
CREATE INDEX tasks_finished ON tasks (finished_ms) WHERE finished_ms IS NOT NULL;

CREATE TABLE attempts (
    task_id text NOT NULL,
    number integer NOT NULL,
    doc text NOT NULL,
    PRIMARY KEY (task_id, number)
);

CREATE TABLE keyed_tasks (
    tenant text NOT NULL,
    key text NOT NULL,
    task_id text NOT NULL,
    PRIMARY KEY (tenant, key)
);

CREATE TABLE servers (
    id text PRIMARY KEY,
    started_at timestamptz NOT NULL DEFAULT now(),
    alive_until timestamptz NOT NULL
);

CREATE TABLE dead_letters (
    task_id text PRIMARY KEY,
    tenant text NOT NULL,
    failed_ms bigint NOT NULL,
    doc text NOT NULL
);

CREATE TABLE ready_probe (
    id integer PRIMARY KEY,
    at timestamptz NOT NULL
);
