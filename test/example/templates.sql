-- test/example/templates.sql: the demo's sharded tables, as templates.
-- Data nodes follow this with sharded_id.add_table() for each; a router
-- loads it as is, as the definitions of its ops tables.
CREATE SCHEMA app;
CREATE TABLE app.users (
    id bigint PRIMARY KEY,
    name text NOT NULL
);
CREATE TABLE app.photos (
    id bigint PRIMARY KEY,
    user_id bigint NOT NULL REFERENCES app.users (id),
    caption text
);
