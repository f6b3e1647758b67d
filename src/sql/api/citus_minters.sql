/* src/sql/api/citus_minters.sql */

--
-- Minter numbers of Citus nodes (src/citus.c).  On a server that preloads
-- Citus, the node field of an id holds a minter number that the node leases
-- from its coordinator: citus_lease_minter, called by the node over its own
-- connection, grants it for sharded_id.citus_lease_time at a time, renews it
-- while the node is an active primary of pg_dist_node with the settings of
-- the coordinator, and gives a number to another node only once its last
-- holder's lease has run out, with that lease's end as the new holder's
-- time floor.  The table is used on the coordinator only.
--

CREATE TABLE sharded_id.citus_minters (
    node_key    text PRIMARY KEY,
    minter      integer NOT NULL CHECK (minter >= 0),
    group_id    integer NOT NULL,
    node_name   text NOT NULL,
    node_port   integer NOT NULL,
    stripes     integer NOT NULL,
    node_bits   integer NOT NULL,
    expires_ms  bigint NOT NULL,
    superseded  boolean NOT NULL DEFAULT false,
    renewed_at  timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);

COMMENT ON TABLE sharded_id.citus_minters IS
'on a Citus coordinator: the minter number leased to each node (node_key: system identifier, host and port), the settings it mints with, and the end of its lease in Unix ms; superseded once another server took over its number or its address';

REVOKE ALL ON sharded_id.citus_minters FROM PUBLIC;

CREATE FUNCTION sharded_id.citus_lease_minter(node_key text, group_id integer,
                                             node_name text, node_port integer,
                                             stripes integer, stripe integer,
                                             node_bits integer, lease_ms integer,
                                             OUT minter integer,
                                             OUT expires_ms bigint,
                                             OUT floor_ms bigint)
RETURNS record
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    now_ms bigint;
    cluster_stripes integer;
    width integer;
    own sharded_id.citus_minters;
    other sharded_id.citus_minters;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'the citus extension is not installed in this database'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Minter numbers are leased from the coordinator of a Citus cluster.';
    END IF;
    IF lease_ms < 1000 OR stripes < 1 OR stripe < 0 OR stripe >= stripes THEN
        RAISE EXCEPTION 'invalid minter lease request'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('lease_ms %s, stripes %s, stripe %s.', lease_ms, stripes, stripe);
    END IF;
    -- One grant at a time, so that two nodes never take one number.
    LOCK TABLE sharded_id.citus_minters IN EXCLUSIVE MODE;
    now_ms := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;

    -- Only an active primary of the cluster mints: a removed or disabled
    -- node is refused, and stops once its lease runs out.
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_node n
                   WHERE n.groupid = citus_lease_minter.group_id
                     AND n.nodename = citus_lease_minter.node_name
                     AND n.nodeport = citus_lease_minter.node_port
                     AND n.isactive AND n.noderole = 'primary') THEN
        RAISE EXCEPTION 'node %:% (group %) is not an active node of the Citus cluster',
                        node_name, node_port, group_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The coordinator''s pg_dist_node has no active primary of that group, name and port: the node was removed or disabled, and may not mint sharded ids.',
                  HINT = 'Add the node again with citus_add_node, or mint elsewhere.';
    END IF;

    -- One server per address: another one that still holds a lease for it
    -- waits out its lease; one whose lease ended gives up its number.
    SELECT * INTO other FROM sharded_id.citus_minters m
    WHERE m.node_key <> citus_lease_minter.node_key AND NOT m.superseded
      AND m.node_name = citus_lease_minter.node_name AND m.node_port = citus_lease_minter.node_port
      AND m.expires_ms >= now_ms;
    IF FOUND THEN
        RAISE EXCEPTION 'another server holds the minter lease of Citus node %:% until %',
                        node_name, node_port, pg_catalog.to_timestamp(other.expires_ms / 1000.0)
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Server %s leased minter number %s at this address; a server that replaces it mints once that lease has ended.',
                                  pg_catalog.split_part(other.node_key, ':', 1), other.minter),
                  HINT = 'Try again after the end of that lease.';
    END IF;
    UPDATE sharded_id.citus_minters m SET superseded = true
    WHERE m.node_key <> citus_lease_minter.node_key AND NOT m.superseded
      AND m.node_name = citus_lease_minter.node_name AND m.node_port = citus_lease_minter.node_port;

    -- The coordinator's settings are the cluster's.
    cluster_stripes := current_setting('sharded_id.stripes')::integer;
    IF stripes <> cluster_stripes THEN
        RAISE EXCEPTION 'settings of Citus node %:% disagree with the coordinator''s: sharded_id.stripes is % there and % on the coordinator',
                        node_name, node_port, stripes, cluster_stripes
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Every node of a Citus cluster mints with the coordinator''s sharded_id.stripes; a node that disagrees may not mint, so that no id repeats while a change is rolled out.',
                  HINT = 'Set sharded_id.stripes as on the coordinator and restart the node.';
    END IF;
    -- A node with other settings still holding a lease: its ids may
    -- overlap any number of ours, so wait for its lease to run out.
    SELECT * INTO other FROM sharded_id.citus_minters m
    WHERE m.node_key <> citus_lease_minter.node_key AND NOT m.superseded
      AND (m.stripes <> citus_lease_minter.stripes OR m.node_bits <> citus_lease_minter.node_bits)
      AND m.expires_ms >= now_ms
    ORDER BY m.expires_ms DESC LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'node %:% still mints with other settings: sharded_id.stripes % until %',
                        other.node_name, other.node_port, other.stripes,
                        pg_catalog.to_timestamp(other.expires_ms / 1000.0)
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Node %s:%s leased minter number %s with sharded_id.stripes = %s, and this node asks with %s; the two may not mint at once.',
                                  other.node_name, other.node_port, other.minter, other.stripes, stripes),
                  HINT = 'Roll the setting out to that node too; its lease then runs out and is not renewed. Try again after its end.';
    END IF;

    -- A server at a new address for its group (a promoted standby after
    -- citus_update_node) keeps the lease it held at the old one, which no
    -- active node has any more.
    IF NOT EXISTS (SELECT 1 FROM sharded_id.citus_minters m WHERE m.node_key = citus_lease_minter.node_key) THEN
        UPDATE sharded_id.citus_minters m
        SET node_key = citus_lease_minter.node_key,
            node_name = citus_lease_minter.node_name, node_port = citus_lease_minter.node_port
        WHERE m.ctid = (SELECT r.ctid FROM sharded_id.citus_minters r
                        WHERE pg_catalog.split_part(r.node_key, ':', 1) = pg_catalog.split_part(citus_lease_minter.node_key, ':', 1)
                          AND r.group_id = citus_lease_minter.group_id AND NOT r.superseded
                          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_node d
                                          WHERE d.nodename = r.node_name AND d.nodeport = r.node_port
                                            AND d.isactive AND d.noderole = 'primary')
                        ORDER BY r.expires_ms DESC LIMIT 1);
    END IF;
    SELECT * INTO own FROM sharded_id.citus_minters m WHERE m.node_key = citus_lease_minter.node_key;
    IF stripes > 1 THEN
        -- Stripes set by hand: the number is the node's stripe.
        minter := stripe;
        SELECT * INTO other FROM sharded_id.citus_minters m
        WHERE m.node_key <> citus_lease_minter.node_key AND NOT m.superseded
          AND m.stripes = citus_lease_minter.stripes AND m.minter = stripe
          AND m.expires_ms >= now_ms;
        IF FOUND THEN
            RAISE EXCEPTION 'sharded_id.stripe % is held by Citus node %:% until %',
                            stripe, other.node_name, other.node_port,
                            pg_catalog.to_timestamp(other.expires_ms / 1000.0)
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = 'Two nodes with one stripe would mint the same ids.',
                      HINT = 'Give every node of the cluster a stripe of its own.';
        END IF;
    ELSIF own.node_key IS NOT NULL AND NOT own.superseded
          AND own.stripes = stripes AND own.node_bits = node_bits THEN
        minter := own.minter;
    ELSE
        -- The node's group id if it is free (as 1.6 numbered nodes), else
        -- the lowest free number: dense, so that churn never runs out.  A
        -- number is free once its holder's lease ran out and the holder is
        -- no active node of the cluster: an idle node keeps its number.
        width := node_bits;
        SELECT n INTO minter
        FROM pg_catalog.generate_series(0, (1 << width) - 1) n
        WHERE NOT EXISTS (SELECT 1 FROM sharded_id.citus_minters m
                          WHERE m.node_key <> citus_lease_minter.node_key AND NOT m.superseded
                            AND m.stripes = citus_lease_minter.stripes AND m.minter = n
                            AND (m.expires_ms >= now_ms
                                 OR EXISTS (SELECT 1 FROM pg_catalog.pg_dist_node d
                                            WHERE d.nodename = m.node_name AND d.nodeport = m.node_port
                                              AND d.isactive AND d.noderole = 'primary')))
        ORDER BY n <> citus_lease_minter.group_id, n LIMIT 1;
        IF minter IS NULL THEN
            RAISE EXCEPTION 'every minter number of the Citus cluster is leased'
                USING ERRCODE = 'configuration_limit_exceeded',
                      DETAIL = format('Sharded ids hold minter numbers 0 to %s, and %s nodes hold a lease now.',
                                      (1 << width) - 1, 1 << width),
                      HINT = 'Remove a node; its number is free once its lease runs out.';
        END IF;
    END IF;

    -- Every id of a lease lies at or before its end: ids of this number
    -- start after the last lease of any other holder of it, and after any
    -- other node's lease with other settings.  This node's own earlier ids
    -- lie below its durable ceiling, which its new ones start above.
    SELECT coalesce(max(m.expires_ms), 0) INTO floor_ms
    FROM sharded_id.citus_minters m
    WHERE m.node_key <> citus_lease_minter.node_key
      AND (m.minter = citus_lease_minter.minter
           OR m.stripes <> citus_lease_minter.stripes OR m.node_bits <> citus_lease_minter.node_bits);
    UPDATE sharded_id.citus_minters m SET superseded = true
    WHERE m.node_key <> citus_lease_minter.node_key AND NOT m.superseded
      AND m.stripes = citus_lease_minter.stripes AND m.minter = citus_lease_minter.minter;

    expires_ms := now_ms + lease_ms;
    INSERT INTO sharded_id.citus_minters AS m
        (node_key, minter, group_id, node_name, node_port, stripes, node_bits, expires_ms, superseded, renewed_at)
    VALUES (node_key, minter, group_id, node_name, node_port, stripes, node_bits, expires_ms, false,
            pg_catalog.clock_timestamp())
    ON CONFLICT ON CONSTRAINT citus_minters_pkey DO UPDATE
        SET minter = excluded.minter, group_id = excluded.group_id,
            node_name = excluded.node_name, node_port = excluded.node_port,
            stripes = excluded.stripes, node_bits = excluded.node_bits,
            expires_ms = GREATEST(m.expires_ms, excluded.expires_ms),
            superseded = false, renewed_at = excluded.renewed_at
    RETURNING m.expires_ms INTO expires_ms;
END
$$;

COMMENT ON FUNCTION sharded_id.citus_lease_minter(text, integer, text, integer, integer, integer, integer, integer) IS
'on a Citus coordinator, called by each node over its own connection (src/citus.c): grant or renew the node''s minter number for lease_ms; refuses a node that is not an active primary, whose settings disagree with the coordinator''s, or while a node with other settings holds a lease; floor_ms is the time its ids must lie after';

-- Not for PUBLIC: a role that held the table's lock, or a row of it, in an
-- open transaction would stop every node's renewal.  Nodes call it as the
-- extension's owner (src/citus.c).
REVOKE EXECUTE ON FUNCTION sharded_id.citus_lease_minter(text, integer, text, integer, integer, integer, integer, integer) FROM PUBLIC;

CREATE FUNCTION sharded_id.citus_minter()
RETURNS integer
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_citus_minter';

COMMENT ON FUNCTION sharded_id.citus_minter() IS
'the minter number this node''s ids carry in their node field (stripe_id(id, 32) on Citus without stripes), leased from the coordinator if need be; NULL on a server that does not preload Citus';
