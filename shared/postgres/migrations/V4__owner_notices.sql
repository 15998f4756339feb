-- A change to a row of pending work that another server owns (a cancel or a replace
-- through this server's API, a take-over) is told to that server on commit, so that it
-- can trust what it last read of the rows it owns without reading them again before
-- each call. Each server names itself on its connections (`boomerang.server`); a write
-- with no name (a person's session) is told too. A take-over frees a lapsed server's
-- rows quietly (`boomerang.quiet`) and tells that server once, with `*` for the row. Rows are deleted only once finished,
-- when no server owns them.
CREATE FUNCTION boomerang_owner_notice() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('boomerang_owners',
        OLD.owner || ' ' || NEW.id || ' ' || coalesce(NEW.owner, ''));
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_owner_notice AFTER UPDATE ON tasks FOR EACH ROW
    WHEN (OLD.owner IS NOT NULL
          AND OLD.owner IS DISTINCT FROM current_setting('boomerang.server', true)
          AND current_setting('boomerang.quiet', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION boomerang_owner_notice();
