/* src/sql/sharded_id--1.4--1.5.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sharded_id UPDATE TO '1.5'" to load this file. \quit

--
-- 1.5: the guarantees of 1.4 hold off the tested paths, where operators and
-- applications go.
--
