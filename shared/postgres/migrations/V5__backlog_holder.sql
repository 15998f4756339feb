-- The backlog one server reads alone. A server that finds a backlog (work already due that
-- no server holds, as after a downtime) while no other server is running holds every such
-- row due before `below_ms` without writing it: it reads them a page at a time, and the
-- other servers' loaders lease nothing due before that while it is alive. Once the range
-- is read (or another server starts), it writes its id into what is left of it and lets
-- the range go.
-- Pages of the held range go on after (due time, id): the index of unowned work orders
-- by both, so that rows due on one millisecond are not sorted again for each page.
CREATE INDEX tasks_unowned_due_id ON tasks (due_ms, id) WHERE owner IS NULL AND due_ms IS NOT NULL;
DROP INDEX tasks_unowned_due;

CREATE TABLE backlog_holder (
    id integer PRIMARY KEY CHECK (id = 1),
    owner text NOT NULL,
    below_ms bigint NOT NULL
);

-- A change to a row of the held range, unowned in its row, is told to the holder as a
-- change to a row it owns is (`boomerang_owners`, see V4), so that it may trust what it
-- read of them. Leases (quiet, and only of rows no server holds) are not told, nor are
-- the holder's own writes (`boomerang.holder`: nobody else to tell).
CREATE FUNCTION boomerang_backlog_notice() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    holder text;
BEGIN
    SELECT h.owner INTO holder FROM backlog_holder h
     WHERE h.id = 1 AND OLD.due_ms < h.below_ms;
    IF holder IS NOT NULL
       AND holder IS DISTINCT FROM current_setting('boomerang.server', true) THEN
        PERFORM pg_notify('boomerang_owners',
            holder || ' ' || NEW.id || ' ' || coalesce(NEW.owner, ''));
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_backlog_notice AFTER UPDATE ON tasks FOR EACH ROW
    WHEN (OLD.owner IS NULL AND OLD.due_ms IS NOT NULL
          AND current_setting('boomerang.quiet', true) IS DISTINCT FROM 'on'
          AND current_setting('boomerang.holder', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION boomerang_backlog_notice();
