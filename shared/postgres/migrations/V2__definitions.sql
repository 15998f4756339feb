-- A tenant's named definitions, circuit breakers, bulk jobs, paused flows and schedules,
-- and each tenant's signing secrets (shared by every server, so all sign alike).
--
-- Ids, names and keys that lists are ordered by are compared by their bytes
-- (COLLATE "C"), as the embedded store compares them, whatever the database's default
-- collation: ULIDs then sort by time, and a cursor compares as the list's order does.

-- Policies, templates and breaker settings, each kind apart: a policy and a template may
-- share a name.
CREATE TABLE definitions (
    tenant text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('policy', 'template', 'breaker_settings')),
    name text COLLATE "C" NOT NULL,
    doc text NOT NULL,
    PRIMARY KEY (tenant, kind, name)
);

-- One breaker per tenant and destination, written conditionally on its version; `open`
-- beside the document, so that open ones are listed by an index read.
CREATE TABLE breakers (
    tenant text NOT NULL,
    destination text COLLATE "C" NOT NULL,
    version bigint NOT NULL,
    open boolean NOT NULL,
    doc text NOT NULL,
    PRIMARY KEY (tenant, destination)
);
CREATE INDEX breakers_open ON breakers (tenant, destination) WHERE open;

-- Bulk jobs, written conditionally on their version; `running` so that whoever runs them
-- finds them by an index read, `finished_ms` so that retention removes a finished job
-- with the tasks of its time.
CREATE TABLE bulk_jobs (
    tenant text NOT NULL,
    id text COLLATE "C" NOT NULL,
    version bigint NOT NULL,
    running boolean NOT NULL,
    finished_ms bigint,
    doc text NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX bulk_jobs_running ON bulk_jobs (tenant, id) WHERE running;
CREATE INDEX bulk_jobs_finished ON bulk_jobs (finished_ms) WHERE finished_ms IS NOT NULL;

CREATE TABLE paused_flows (
    tenant text NOT NULL,
    key text COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant, key)
);

-- Schedules, written conditionally on their version.
CREATE TABLE schedules (
    tenant text NOT NULL,
    id text COLLATE "C" NOT NULL,
    version bigint NOT NULL,
    doc text NOT NULL,
    PRIMARY KEY (tenant, id)
);

-- Each tenant's signing secrets (a SecretSet, newest first), replaced conditionally on
-- their version: of two rotations at once, one wins.
CREATE TABLE tenant_secrets (
    tenant text PRIMARY KEY,
    version bigint NOT NULL,
    doc text NOT NULL
);
