-- Flow limits, a tenant's slots at a destination, and order keys' lines: counters every
-- server shares, so that a limit holds across all of them. Times are epoch milliseconds,
-- as the engine passes them (every statement takes its `now` from the caller).
--
-- Keys are compared by their bytes (COLLATE "C"), as the other stores compare them:
-- lists by key come out in the order the engine sorts them, and a cursor compares alike.

-- How many asked to start in each window of a flow: one row per window, counted by an
-- upsert that answers the count. The first ask of a new window removes the flow's old
-- ones (kept a little while for a server whose clock runs behind).
CREATE TABLE flow_windows (
    tenant text NOT NULL,
    key text COLLATE "C" NOT NULL,
    window_ms bigint NOT NULL,
    asked bigint NOT NULL,
    PRIMARY KEY (tenant, key, window_ms)
);

-- A flow's slots (its parallelism), one row per holder until when it holds it. A take
-- runs under the flow's transaction-scoped advisory lock, counts the unexpired rows and
-- removes the expired ones.
CREATE TABLE flow_slots (
    tenant text NOT NULL,
    key text COLLATE "C" NOT NULL,
    holder text NOT NULL,
    until_ms bigint NOT NULL,
    PRIMARY KEY (tenant, key, holder)
);
-- A tenant's flows with calls in flight (its flow list), and a flow's expired slots.
CREATE INDEX flow_slots_until ON flow_slots (tenant, key, until_ms);

-- Tasks put off by a flow, one note per task (its latest attempt), until when they wait.
-- Notes past their time are removed by the next note in the flow, and taken ones go.
CREATE TABLE flow_waiting (
    tenant text NOT NULL,
    key text COLLATE "C" NOT NULL,
    task_id text NOT NULL,
    attempt integer NOT NULL,
    until_ms bigint NOT NULL,
    PRIMARY KEY (tenant, key, task_id)
);
-- A flow's notes past their time (removed), and a tenant's flows with tasks waiting.
CREATE INDEX flow_waiting_until ON flow_waiting (tenant, key, until_ms);

-- A tenant's slots at a destination where it has a limit of its own: as a flow's slots.
CREATE TABLE destination_slots (
    tenant text NOT NULL,
    destination text COLLATE "C" NOT NULL,
    holder text NOT NULL,
    until_ms bigint NOT NULL,
    PRIMARY KEY (tenant, destination, holder)
);
CREATE INDEX destination_slots_until ON destination_slots (tenant, destination, until_ms);

-- Each order key's last place given, moved on by an upsert whose row lock orders the
-- places: two registrations never get one place, and a later one a greater place. The row
-- stays when the line empties, so that a place number is never given twice.
CREATE TABLE order_keys (
    tenant text NOT NULL,
    key text COLLATE "C" NOT NULL,
    last_seq bigint NOT NULL,
    PRIMARY KEY (tenant, key)
);

-- The places held, one row each: a key's head is the first row of its primary key.
CREATE TABLE order_places (
    tenant text NOT NULL,
    key text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    task_id text NOT NULL,
    at_ms bigint NOT NULL,
    PRIMARY KEY (tenant, key, seq)
);
