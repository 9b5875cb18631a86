-- Inserts 300k rows into an in-memory database and indexes them: SQLite's page cache, parser
-- and b-tree code make many mid-sized allocations. Run as: sqlite3 :memory: ".read THIS"
CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL, tag TEXT);
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000)
INSERT INTO t (name, score, tag)
SELECT 'name-' || hex(randomblob(8)), abs(random() % 100000) / 7.0, 'tag' || (i % 97) FROM n;
COMMIT;
CREATE INDEX t_name ON t (name);
CREATE INDEX t_tag_score ON t (tag, score);
SELECT count(*) FROM t WHERE tag = 'tag5' AND score > 100;
