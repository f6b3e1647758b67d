-- test/bench/scale_templates.sql: the demo templates on a benchmark data node.
CREATE SCHEMA app;
CREATE TABLE app.users (id bigint PRIMARY KEY, name text NOT NULL);
CREATE TABLE app.photos (
    id bigint PRIMARY KEY,
    user_id bigint NOT NULL REFERENCES app.users (id),
    caption text
);
SELECT sharded_id.add_table('app.users');
SELECT sharded_id.add_table('app.photos');
