-- A small, coherent synthetic recording for the fuzzer's seed corpus (scripts/fuzz.sh applies
-- schemas/memledger.sql first, then this). Two images (a parent and its fork child), three stacks,
-- leaks, a peak, phases and a timeline: mutations of it reach every query of the analyzer.
INSERT INTO meta VALUES ('schema_version', '1'), ('memledger_version', '0.1.0'),
  ('command', 'seed --demo'), ('start_wall', '2026-11-30T02:00:00Z'), ('start_monotonic_ns', '1000'),
  ('duration_ns', '5000000'), ('wait_ns', '0'), ('lost_records', '0'), ('fold_threshold_ns', '1000000'),
  ('complete', '1'), ('bucket_ns', '1000000'), ('peak_image', '1');
INSERT INTO processes (id, pid, ppid, parent_id, command, exe, start_ns, end_ns, ended_by, exit_code, signal,
  forked, wait_ns, peak_rss, peak_heap_bytes, peak_heap_ns, peak_mmap_bytes, peak_mmap_ns, unknown_frees) VALUES
  (1, 100, 1, NULL, 'seed --demo', '/usr/bin/seed', 0, 5000000, 'exit', 0, NULL, 0, 0, 4096000, 9000, 2500000, 8192, 3000000, 0),
  (2, 101, 100, 1, 'seed --demo', '/usr/bin/seed', 1000000, 4000000, 'signal', NULL, 11, 1, 0, 2048000, 300, 1500000, 0, 0, 2);
INSERT INTO modules VALUES (1, 1, '/usr/bin/seed', 'abcdef', 4194304, 4194304, 4300000, 0, NULL),
  (2, 1, '/usr/lib/libplugin.so', NULL, 140000000000, 140000000000, 140000100000, 100, 4000000);
INSERT INTO ips VALUES (1, 1, 4195000, 1), (2, 1, 4196000, 1), (3, 1, 140000000500, 2), (4, 2, 4195000, NULL);
INSERT INTO frames VALUES (1, 0, 'leaky(int)', 'seed.cpp', 12), (1, 1, 'outer', 'seed.cpp', 30),
  (2, 0, 'main', 'seed.cpp', 50), (3, 0, NULL, NULL, NULL);
-- stack_nodes rows (schema 3): nodes 1 [1, 2] and 2 [3] + parent 1's frames; node 3 [4] in image 2.
INSERT INTO stack_nodes VALUES (1, 1, X'00020102010103'), (3, 2, X'000104');
-- site_totals rows (schema 4): image 1's sites 1 (malloc) and 2 (mmap), image 2's site 3 (new).
INSERT INTO site_totals (image_id, sites) VALUES (1, X'02000AA846079C31038C150AA84602880E010AA8468407840709C09FAB030202020280400180200180200280400000000280408020802002A08D0600'), (2, X'060103AC02000003AC0203AC0200000003AC026464030000');
INSERT INTO allocations VALUES (1, 1, 100, 'malloc', 'malloc', 65536, 900, 1, 1000000, NULL, NULL),
  (2, 1, 100, 'malloc', 'realloc', 66536, 900, 1, 1500000, 2600000, 1),
  (3, 1, 100, 'mmap', 'mmap', 1048576, 4096, 2, 2000000, NULL, NULL),
  (4, 2, 101, 'new', 'new', 70000, 100, 3, 1600000, NULL, NULL);
-- timeline_buckets (schema 3): image 1's three buckets in one row, image 2's one.
INSERT INTO timeline_buckets (image_id, buckets) VALUES (1, X'00880E00880E000380897AC0EE6D0100840780897AA846A038A8468040038092F401C0A386010601982A80897A972A982A0080400003058C15'), (2, X'80897AD80400D80400038080FA0180807D0300AC02');
INSERT INTO markers VALUES (1, 500000, 'load'), (1, 2500000, 'compute'), (2, 1200000, 'child');
