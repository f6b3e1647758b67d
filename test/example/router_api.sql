-- test/example/router_api.sql: the router's side of test/example/node_api.sql,
-- in PL/Proxy.  Load with
--   psql -v shard_count=N -f test/example/router_api.sql
-- on a router (CREATE EXTENSION sharded_id_router CASCADE) after
-- sharded_id.apply_shard_map() has made the cluster "sharded_id".
--
-- Each function has the signature of the data-node function it calls.
-- RUN ON picks partition (value & (N - 1)); partition n is logical shard n,
-- so routing on sharded_id.shard_for(key, N) or on sharded_id.shard_id(id)
-- reaches the node that holds the shard.  Never route on a raw id: its low
-- bits are its sequence field, not its shard.
CREATE SCHEMA app_api;
COMMENT ON SCHEMA app_api IS 'application entry points, routed by PL/Proxy';

CREATE FUNCTION app_api.user_shard(name text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN sharded_id.shard_for(name, :shard_count);
COMMENT ON FUNCTION app_api.user_shard(text) IS 'the shard a new user goes to';

-- CLUSTER names sharded_id.route(shard) or route_id(id), which return
-- 'sharded_id' after waiting out a move's switch of the shard, so that a
-- call made during a move reaches the shard's new node instead of failing.
CREATE FUNCTION app_api.user_cluster(name text) RETURNS text
LANGUAGE sql VOLATILE STRICT
RETURN sharded_id.route(app_api.user_shard(name));
COMMENT ON FUNCTION app_api.user_cluster(text) IS 'the cluster for a new user''s shard, once no move is switching it';

CREATE FUNCTION app_api.add_user(name text) RETURNS bigint
LANGUAGE plproxy AS $$
    CLUSTER app_api.user_cluster(name);
    RUN ON app_api.user_shard(name);
$$;
COMMENT ON FUNCTION app_api.add_user(text) IS 'insert a user on the shard of its name; returns its id';

CREATE FUNCTION app_api.add_photo(user_id bigint, caption text) RETURNS bigint
LANGUAGE plproxy AS $$
    CLUSTER sharded_id.route_id(user_id);
    RUN ON sharded_id.shard_id(user_id);
$$;
COMMENT ON FUNCTION app_api.add_photo(bigint, text) IS 'insert a photo on its user''s shard; returns its id';

CREATE FUNCTION app_api.photos_of(user_id bigint, OUT id bigint, OUT caption text) RETURNS SETOF record
LANGUAGE plproxy AS $$
    CLUSTER sharded_id.route_id(user_id);
    RUN ON sharded_id.shard_id(user_id);
$$;
COMMENT ON FUNCTION app_api.photos_of(bigint) IS 'photos of a user, from its shard';

CREATE FUNCTION app_api.user_by_id(wanted_id bigint, OUT id bigint, OUT name text) RETURNS SETOF record
LANGUAGE plproxy AS $$
    CLUSTER sharded_id.route_id(wanted_id);
    RUN ON sharded_id.shard_id(wanted_id);
$$;
COMMENT ON FUNCTION app_api.user_by_id(bigint) IS 'one user, from the shard in its id';
