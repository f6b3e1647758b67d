--
-- Hints that give core's errors about the extension's functions a way out
-- (src/hints.c): a function of sharded_id_router called where the router
-- is not installed, and a function of sharded_id its caller may not run.
--
CREATE EXTENSION IF NOT EXISTS sharded_id;
SELECT count(*) AS router_installed FROM pg_extension WHERE extname = 'sharded_id_router';
\set VERBOSITY default

-- Every function and procedure of the router, called as a reader would:
-- "does not exist", with the hint to create the router.
CALL sharded_id.move_shard(1, 'node2');
CALL sharded_id.recover_moves();
CALL sharded_id.rebalance();
SELECT sharded_id.apply_shard_map();
SELECT sharded_id.place_shard(1, 'node2');
SELECT format('SELECT sharded_id.%I(1)', n)
FROM unnest(ARRAY['create_ops_table', 'node_server', 'rebalance_plan', 'route', 'route_id']) n \gexec

-- A role that may not mint: the grant to ask for, and where to find the
-- signatures.
CREATE ROLE sharded_id_hints_nobody;
CREATE FUNCTION public.hints_private() RETURNS int LANGUAGE sql AS 'SELECT 1';
REVOKE EXECUTE ON FUNCTION public.hints_private() FROM PUBLIC;
SET ROLE sharded_id_hints_nobody;
SELECT sharded_id.next_id(1);
SELECT sharded_id.next_ids(1, 2);
-- A provisioning function: the provisioning role.
SELECT sharded_id.create_shard(1);
-- Another schema's function of another name: no hint.
SELECT public.hints_private();
RESET ROLE;
DROP FUNCTION public.hints_private();
DROP ROLE sharded_id_hints_nobody;
