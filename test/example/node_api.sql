-- test/example/node_api.sql: the functions a data node offers the router, for
-- the demo tables app.users and app.photos.  Load with
--   psql -v shard_count=N -f test/example/node_api.sql
-- where N is the number of logical shards of the whole cluster.
--
-- The pattern for an application's own functions: find the shard (from an
-- application key with sharded_id.shard_for, or from an id with
-- sharded_id.shard_id), enter it with sharded_id.enter_shard, which fences
-- off moves and raises a retryable 40001 when the shard is elsewhere, then
-- run the statement in the schema it returns.
CREATE SCHEMA app_api;
COMMENT ON SCHEMA app_api IS 'functions the router calls';

CREATE FUNCTION app_api.user_shard(name text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN sharded_id.shard_for(name, :shard_count);
COMMENT ON FUNCTION app_api.user_shard(text) IS 'the shard a new user goes to';

-- Insert: a new user, on the shard of the name; returns the new id.
CREATE FUNCTION app_api.add_user(name text) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    new_id bigint;
BEGIN
    EXECUTE format('INSERT INTO %I.users (name) VALUES ($1) RETURNING id',
                   sharded_id.enter_shard(app_api.user_shard(name)))
    INTO new_id USING name;
    RETURN new_id;
END $$;
COMMENT ON FUNCTION app_api.add_user(text) IS 'insert a user; returns its id';

-- Insert: a photo, on its user's shard; returns the new id.
CREATE FUNCTION app_api.add_photo(user_id bigint, caption text) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    new_id bigint;
BEGIN
    EXECUTE format('INSERT INTO %I.photos (user_id, caption) VALUES ($1, $2) RETURNING id',
                   sharded_id.enter_shard(sharded_id.shard_id(user_id)))
    INTO new_id USING user_id, caption;
    RETURN new_id;
END $$;
COMMENT ON FUNCTION app_api.add_photo(bigint, text) IS 'insert a photo of a user; returns its id';

-- Read by key: a user's photos.
CREATE FUNCTION app_api.photos_of(user_id bigint, OUT id bigint, OUT caption text) RETURNS SETOF record
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY EXECUTE format('SELECT id, caption FROM %I.photos WHERE user_id = $1 ORDER BY id',
                                sharded_id.enter_shard(sharded_id.shard_id(user_id)))
    USING user_id;
END $$;
COMMENT ON FUNCTION app_api.photos_of(bigint) IS 'photos of a user, oldest first';

-- Read by id: one user.
CREATE FUNCTION app_api.user_by_id(wanted_id bigint, OUT id bigint, OUT name text) RETURNS SETOF record
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY EXECUTE format('SELECT id, name FROM %I.users WHERE id = $1',
                                sharded_id.enter_shard(sharded_id.shard_id(wanted_id)))
    USING wanted_id;
END $$;
COMMENT ON FUNCTION app_api.user_by_id(bigint) IS 'one user, by id';
