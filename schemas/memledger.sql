-- memledger recording schema.
-- The version is PRAGMA user_version; readers refuse a file whose version is newer than theirs.
-- Compatibility policy: a new version may add tables and columns (readers of an older version
-- ignore them); it never changes the meaning of an existing column without raising the version
-- so that older readers refuse the file (version 2 narrowed stacks.ips to a row's own frames).
-- Times are nanoseconds since the recording started (meta 'start_monotonic_ns' is that origin
-- on CLOCK_MONOTONIC).
-- The recorder writes everything below; the analyzer and GUI open the file read-only.
-- On disk a finished recording is, by default, this SQLite database compressed as one zstd frame
-- (magic 28 B5 2F FD, content size and checksum set: recorder/compress.h); a recording made with
-- `record --no-compress`, or left by a recorder that did not finish, is the plain database.
-- Readers open both; the compression is no part of the schema version.
-- Version 2: by default `allocations` holds only the blocks live at the end of their
-- process (meta allocation_rows = 'leaks'); per-site activity over time is in `site_timeline`;
-- `stacks` is a tree (stacks.parent_id: a row's ips are only its own innermost frames). A
-- version 1 reader would silently take the missing rows for "no allocations" and a node for a
-- whole stack, so the version went up and old readers refuse these files. Readers of version 2
-- still read version 1 files (no site_timeline: phase top sites come from the allocation rows;
-- no parent_id: ips is the whole stack).
-- Version 3: stacks are packed, many nodes per row, in `stack_nodes` (which replaces `stacks`, see
-- there), the memory curve likewise in `timeline_buckets` (which replaces `timeline`), per-site
-- activity in `site_buckets` (which replaces `site_timeline`, its entries with stack id gaps);
-- everything else is as in version 2.
-- Version 4: the per-site aggregates are packed too, in `site_totals` (which replaces the `sites`
-- table; readers present it as a relation named `sites` with the same columns, see there).
-- Version 5: memory kinds come from one registry (schemas/kinds.h: code, name,
-- address space, shape) and every kind counts in its own account: an address space (host heap,
-- host mmap, each device, pinned host, managed) or a pool (reserved memory counted once, where
-- it lives, with blocks in use inside it). `spaces` names each image's accounts with their exact
-- peaks, and (image 0) the recording's simultaneous peak per space over the live processes;
-- `peak_sites` is the live set at that simultaneous peak; site_totals entries carry their
-- account; timeline entries carry the accounts other than heap and mmap. Custom blocks
-- (memledger_alloc) are in use of a pool, no longer heap. Readers of version 5 read 1 to 4.
-- Version 6: version 5 plus Python frames (`python_code`, `python_finalize`) and leak
-- kinds (`leak_scans`, `leak_kinds`), see their blocks below. Readers of version 6 read 1 to 5
-- (no Python tables; no leak_kinds: every leak "not classified").
-- Version 7: `site_buckets` entries also carry each site's frees, freed bytes and
-- temporaries per bucket (see there), so what every site held at any bucket's end is known (the
-- GUI's Consumed chart, a time range's peak, the live set at a chosen time). The entries' layout
-- changed, so the version went up: a version 6 reader would decode the new fields as the next
-- entries, and refuses the file. Readers of version 7 read 1 to 6 (without per-bucket frees:
-- what a site held between its whole-run peak and its end is unknown; the GUI marks Consumed
-- unavailable and keeps whole-run peaks and temporaries for a range).
-- Version 8 (this file): the two live-set tables of one row per site are packed like the other
-- per-site tables: `peak_site_lists` replaces `peak_sites`, `python_finalize_lists` replaces
-- `python_finalize_sites` (see there; readers present neither under its old name: the analyzer
-- reads both forms through one reader per table). Inserting torch_mlp's ~420k rows of the two
-- was ~0.2 s of the recorder's work after the program exited. A version 7 reader would find
-- neither table, so the version went up. Readers of version 8 read 1 to 7.
PRAGMA user_version = 8;

-- Key/value facts about the run: schema_version, memledger_version, command, start_wall
-- (ISO 8601), start_monotonic_ns, duration_ns, wait_ns (time programs waited for ring space),
-- lost_records, complete ('1' once the recorder finished normally), recorder_cpu_ns (CPU time
-- of the recorder's draining thread: drain, pair, aggregate, write, until the last process was
-- closed; symbolization not included; absent in files of older recorders),
-- allocation_rows (which blocks have an `allocations` row: 'leaks' = only blocks live at the end
-- of their process, the default; 'long_lived' = also freed blocks that lived at least
-- fold_threshold_ns; 'all' = every block; absent in version 1 files, where fold_threshold_ns 0
-- means 'all' and anything else 'long_lived'), fold_threshold_ns (0 for 'all', the threshold for
-- 'long_lived', 9223372036854775807 for 'leaks': no freed block lived that long),
-- bucket_ns (timeline bucket width), peak_image (the image whose own heap peak is the largest;
-- `sites.peak_*` of every image's sites are the live set at that image's own peak of the site's
-- account).
-- A fork child starts with an empty live set: frees of blocks inherited from the parent are
-- counted in processes.unknown_frees, never as the child's allocations or leaks.
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- One row per process image: a started program, a forked child, or the image an exec made.
CREATE TABLE processes (
  id         INTEGER PRIMARY KEY,     -- image id, referenced everywhere else
  pid        INTEGER NOT NULL,
  ppid       INTEGER NOT NULL,
  parent_id  INTEGER,                 -- image id of the parent (or of the image that exec'd into this one)
  command    TEXT NOT NULL,           -- argv joined by spaces (from /proc/PID/cmdline)
  exe        TEXT,                    -- /proc/PID/exe
  start_ns   INTEGER NOT NULL,
  end_ns     INTEGER,
  ended_by   TEXT,                    -- 'exit' | 'signal' | 'exec' | 'unknown'
  exit_code  INTEGER,                 -- when ended_by = 'exit'
  signal     INTEGER,                 -- when ended_by = 'signal'
  forked     INTEGER NOT NULL DEFAULT 0,
  wait_ns    INTEGER NOT NULL DEFAULT 0,  -- time this image's threads waited for ring space
  peak_rss   INTEGER NOT NULL DEFAULT 0,  -- highest RSS sampled
  -- The heap and mmap spaces' exact peaks of this image, as in `spaces` (kept for readers of the
  -- processes table alone; every other space and pool is only in `spaces`).
  peak_heap_bytes INTEGER NOT NULL DEFAULT 0,  -- exact heap (malloc/new family) peak of this image
  peak_heap_ns    INTEGER NOT NULL DEFAULT 0,
  peak_mmap_bytes INTEGER NOT NULL DEFAULT 0,
  peak_mmap_ns    INTEGER NOT NULL DEFAULT 0,
  unknown_frees   INTEGER NOT NULL DEFAULT 0   -- frees of addresses never seen allocated
);

-- Loaded ELF modules per image, dlopen'ed ones included; unload_ns is set when dlclose made it go.
CREATE TABLE modules (
  id         INTEGER PRIMARY KEY,
  image_id   INTEGER NOT NULL,
  path       TEXT NOT NULL,
  build_id   TEXT,
  bias       INTEGER NOT NULL,        -- load bias (l_addr)
  start      INTEGER NOT NULL,        -- lowest mapped address of its PT_LOAD segments
  end        INTEGER NOT NULL,
  load_ns    INTEGER NOT NULL,
  unload_ns  INTEGER
);

-- Distinct instruction pointers (return addresses) seen in stacks, per image.
CREATE TABLE ips (
  id         INTEGER PRIMARY KEY,
  image_id   INTEGER NOT NULL,
  address    INTEGER NOT NULL,
  module_id  INTEGER                  -- NULL when no module covered it
);

-- Symbolized frames of an ip: depth 0 is the innermost (an inlined function when there are
-- inline frames), the last depth is the real function the code belongs to.
CREATE TABLE frames (
  ip_id      INTEGER NOT NULL,
  depth      INTEGER NOT NULL,
  function   TEXT,                    -- demangled; NULL when unknown
  file       TEXT,
  line       INTEGER,
  PRIMARY KEY (ip_id, depth)
) WITHOUT ROWID;

-- Distinct call stacks, as a tree that shares outer frames, packed (version 3): a row holds the
-- nodes first_id, first_id + 1, ... (consecutive stack ids of one image, at most 256) one after
-- the other in `nodes`, each as unsigned LEB128 varints:
--   parent_gap (0: no parent; else the parent is stack id - parent_gap, always an earlier id),
--   n, then n ip ids (ips.id, innermost first).
-- A stack's frames are its node's ip ids followed by all frames of its parent. The recorder
-- writes a new stack as its frames below the deepest path it shares with earlier stacks, with
-- that path's node as parent (a node written for the shared path when none ended there: nodes no
-- site names are such paths). An empty stack is a node with n = 0 and no parent. Packing the
-- nodes instead of one row each made recordings ~30% smaller compressed (torch_mlp: 911k nodes).
-- Older files have `stacks` instead: version 2 one row per node (id, image_id, ips as
-- little-endian uint32 ip ids, parent_id), version 1 the same without parent_id (ips is the
-- whole stack).
CREATE TABLE stack_nodes (
  first_id   INTEGER PRIMARY KEY,     -- stack id of the first node in `nodes`
  image_id   INTEGER NOT NULL,
  nodes      BLOB NOT NULL
);

-- Per-site aggregates (a site is a stack and a kind), exact for the whole run. Readers see them
-- as the relation `sites` (memledger's analyzer registers it as a virtual table over this one;
-- version 1 to 3 files have a real `sites` table, WITHOUT ROWID, primary key (stack_id, kind))
-- with these columns, all integers but kind:
--   stack_id       INTEGER NOT NULL,
--   kind           TEXT NOT NULL,       -- a kind name of schemas/kinds.h ('malloc', 'new', 'mmap', 'custom', 'device', ...)
--   account        INTEGER NOT NULL,    -- the image's `spaces`.account it counts in (version 5; older: 0, 1 for mmap)
--   image_id       INTEGER NOT NULL,
--   alloc_count    INTEGER NOT NULL,
--   alloc_bytes    INTEGER NOT NULL,
--   free_count     INTEGER NOT NULL,
--   freed_bytes    INTEGER NOT NULL,
--   leak_count     INTEGER NOT NULL,    -- live at the end of its process
--   leak_bytes     INTEGER NOT NULL,
--   peak_count     INTEGER NOT NULL,    -- live at the moment of its image's peak of its account
--   peak_bytes     INTEGER NOT NULL,
--   temp_count     INTEGER NOT NULL,    -- freed before the same thread allocated anything else
--   temp_bytes     INTEGER NOT NULL,
--   realloc_count  INTEGER NOT NULL,    -- allocations made by realloc of a block from this site
--   max_live_count INTEGER NOT NULL,    -- most blocks of this site alive at once
--   max_live_bytes INTEGER NOT NULL,
--   min_size       INTEGER NOT NULL,
--   max_size       INTEGER NOT NULL,
--   same_size_count INTEGER NOT NULL,   -- allocations whose size equals the site's most recent size
--   lifetime_ns_sum INTEGER NOT NULL,   -- sum over freed allocations of (t_free - t_alloc)
--   max_realloc_chain INTEGER NOT NULL, -- longest chain of reallocs of one block ending at this site
-- Packed (version 4): a row holds up to 4096 sites of one image, each as unsigned LEB128 varints
--   zigzag(stack_id - the previous entry's stack_id; the first: stack_id itself),
--   kind (the code of schemas/kinds.h: 0 'malloc', 1 'new', 2 'mmap', 3 'custom', 4 'device', ...),
--   account (version 5 only), then the 18 counters from alloc_count to max_realloc_chain in the
--   order above (schemas/site_counters.h).
-- One SQLite row per site cost ~45 bytes and ~2 us to insert: torch_mlp's 609k sites were 27 of
-- its 45 MB and 1.5 s of the recorder's time after the program exited.
CREATE TABLE site_totals (
  id          INTEGER PRIMARY KEY,
  image_id    INTEGER NOT NULL,
  sites       BLOB NOT NULL
);

-- Individual allocations. Which ones is meta allocation_rows: by default only the blocks live at
-- the end of their process (leaks; t_free is NULL); `record --fold-ms N` adds freed blocks that
-- lived at least N ms, `--no-fold` every block. Blocks without a row are counted exactly in
-- `sites` and, over time, in `site_buckets`.
CREATE TABLE allocations (
  id          INTEGER PRIMARY KEY,
  image_id    INTEGER NOT NULL,
  tid         INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  op          TEXT NOT NULL,          -- malloc, calloc, realloc, new, new[], mmap, PyObject_Malloc, ... (kinds.h)
  address     INTEGER NOT NULL,
  size        INTEGER NOT NULL,
  stack_id    INTEGER NOT NULL,
  t_alloc     INTEGER NOT NULL,
  t_free      INTEGER,                -- NULL: never freed (a leak when its process ended)
  realloc_of  INTEGER                 -- allocations.id this block was realloc'ed from, if recorded
);

-- The memory curve per image: one entry per bucket (meta 'bucket_ns' wide) in which anything
-- happened, plus RSS samples. heap_* is the malloc/new family, mmap_* anonymous mmap. Each entry:
--   t_ns          bucket start (a marker cuts a bucket: the rest starts at it)
--   heap_bytes    live at the end of the bucket
--   heap_max      highest live within the bucket
--   heap_min      lowest live within the bucket
--   mmap_bytes
--   rss_bytes     most recent /proc sample (absent before the first)
--   anon_bytes    resident anonymous memory (for fragmentation), absent before the first sample
--   allocs        allocations in the bucket (version 5: of the heap, account 0, like heap_*;
--   frees         before: of every kind)
--   alloc_bytes
-- Packed (version 3): a row holds consecutive entries of one image (at most 256, in time order),
-- each as LEB128 varints, "signed" ones zigzag-encoded ((v << 1) ^ (v >> 63)), deltas from the
-- previous entry of the row (the first from zeros):
--   signed t_ns - prev t_ns, signed heap_bytes - prev heap_bytes, signed heap_max - heap_bytes,
--   signed heap_bytes - heap_min, signed mmap_bytes - prev mmap_bytes,
--   flags (1: rss_bytes follows, 2: anon_bytes follows),
--   [signed rss_bytes - the row's previous rss_bytes (0 at first)], [the same for anon_bytes],
--   allocs, frees, alloc_bytes,
--   (version 5) n, then n times: account, signed live, signed max - live, signed live - min:
--   the accounts other than 0 (heap: the heap_* values above) and 1 (mmap) that changed in the
--   bucket; an account not listed kept its previous value.
-- Rows are read in id order; an entry for a bucket already seen replaces it. Versions 1-2 had one
-- SQLite row per bucket instead (`timeline`, WITHOUT ROWID, primary key (image_id, t_ns), these
-- columns, rss/anon NULL when absent); packed, the curve compresses to about half of that.
CREATE TABLE timeline_buckets (
  id          INTEGER PRIMARY KEY,
  image_id    INTEGER NOT NULL,
  buckets     BLOB NOT NULL
);

-- Activity per site over time: for every bucket in which anything was allocated or freed (same
-- bucket starts as the memory curve, markers cut them too), every site that allocated or freed
-- in it, so the allocations of any range of buckets (a phase) sum exactly per site, and (version
-- 7) so do its frees: a site's live bytes at any bucket's end are its allocations minus its frees
-- up to there (of its own image; an image that ended holds nothing after its end). Realloc counts
-- as an allocation (and a free of the old block). A bucket's entries (one row per site would cost
-- ~27 bytes a site and bucket, an entry ~5-8) are unsigned LEB128 varints each,
--   stack, kind * 2 + absolute (kind: 0 'malloc', 1 'new', 2 'mmap', 3 'custom': as in site_totals),
--   allocs, alloc_bytes,
--   (version 7) frees, freed_bytes, temps
-- frees as sites.free_count counts them (a mapping once all of it is unmapped; freed_bytes also
-- counts the parts of one unmapped before), temps the frees that made a temporary (sites.temp_count,
-- counted in the bucket of the free). Versions 3 to 6 have the first four only. Here stack is
-- the stack id when absolute is 1, else the gap from the previous entry's stack id (the recorder
-- sorts a bucket's entries by site and makes its first one absolute: small gaps compress a third
-- better than ids). Entries simply follow each other (a reader adds up entries of the same site
-- and bucket).
-- Packed (version 3) like the memory curve: a row holds consecutive buckets of one image (at
-- most 256, in time order), each as a zigzag varint t_ns - the row's previous bucket's t_ns (the
-- first: t_ns itself), an unsigned varint with the byte length of its entries, the entries.
-- Version 2 had `site_timeline` instead (image_id, t_ns, sites: one row per bucket, WITHOUT
-- ROWID, primary key (image_id, t_ns)) with entries stack_id, kind, allocs, alloc_bytes as they
-- are; version 1 had neither.
CREATE TABLE site_buckets (
  id          INTEGER PRIMARY KEY,
  image_id    INTEGER NOT NULL,
  buckets     BLOB NOT NULL
);

-- The accounts of each image (version 5): account 0 is the host heap (malloc/new family), 1 host
-- anonymous mmap; others are numbered as they appear: device:N, pinned, managed (spaces) and
-- pools ('pool:NAME': a pool created with memledger_pool_create, 'custom' for memledger_alloc's
-- unnamed pool, 'pymalloc' for CPython's small objects of `record --python-allocators`, kind
-- pyobject, inside its arenas, which are mmap blocks; a pool's blocks are in use inside memory
-- counted in `space`, never again there).
-- image_id 0 holds the recording's simultaneous peak of each space: the largest sum over the
-- processes alive at once (an exited process's memory leaves the sum; its leftovers stay leaks),
-- with the instant (peak_ns); `peak_site_lists` (versions 5-7: `peak_sites`) holds what was live
-- then. Images are drained one after another, so "at once" is exact within a process and as fine
-- as the recorder's drain rounds (a few ms) across processes.
CREATE TABLE spaces (
  image_id       INTEGER NOT NULL,
  account        INTEGER NOT NULL,
  name           TEXT NOT NULL,       -- heap | mmap | device:N | pinned | managed | pool:NAME | custom | pymalloc
  space          TEXT NOT NULL,       -- the address space it lives in (a pool: where its memory is; '' unknown)
  is_pool        INTEGER NOT NULL,
  pool_id        INTEGER NOT NULL,    -- the program's pool id (memledger_pool_create), 0 otherwise
  kind           TEXT NOT NULL,       -- the kind of its blocks ('' for a space of several kinds)
  base           INTEGER NOT NULL,    -- a pool's base address
  reserved_bytes INTEGER NOT NULL,    -- a pool's reserved size (0: not told)
  created_ns     INTEGER,             -- a pool's creation and destruction
  destroyed_ns   INTEGER,
  peak_bytes     INTEGER NOT NULL,    -- exact peak of live (in use, for a pool) bytes
  peak_ns        INTEGER NOT NULL,
  end_bytes      INTEGER NOT NULL,    -- live when the image ended
  PRIMARY KEY (image_id, account)
) WITHOUT ROWID;

-- The live set at the recording's simultaneous peak of each space (spaces rows of image 0), per
-- image, packed (version 8): a row holds up to 4096 sites of one image live at the peak of
-- `space` (a spaces.name of image 0), each as unsigned LEB128 varints
--   zigzag(stack_id - the previous entry's stack_id; the first: stack_id itself),
--   kind (the code of schemas/kinds.h), count, bytes (its blocks live then)
-- sorted by stack id and kind (schemas/packed_sites.h has the encoding). A cut or malformed
-- entry is damage: readers refuse the row with an error naming it.
-- Versions 5 to 7 had one row per site instead:
--   peak_sites(space TEXT NOT NULL, image_id INTEGER NOT NULL, stack_id INTEGER NOT NULL,
--              kind INTEGER NOT NULL (kind code), count INTEGER NOT NULL, bytes INTEGER NOT NULL)
-- (~210k rows for torch_mlp, written in ~0.12 s).
CREATE TABLE peak_site_lists (
  id        INTEGER PRIMARY KEY,
  space     TEXT NOT NULL,
  image_id  INTEGER NOT NULL,
  sites     BLOB NOT NULL
);

-- Phase markers set by the program (memledger_mark) or `memledger mark`.
CREATE TABLE markers (
  image_id  INTEGER NOT NULL,
  t_ns      INTEGER NOT NULL,
  name      TEXT NOT NULL
);

-- ---- Version 6: Python frames (docs/python.md) ----
-- In a CPython process, stacks carry Python frames in place of the interpreter's evaluation
-- loop. A Python frame's ip has bit 63 set (ips.address, a signed integer, is negative):
-- (code serial << 32) | instruction offset in code units; its module_id is NULL and its one
-- `frames` row names the Python function (qualified name), its .py file and line, resolved from
-- its code object below. Readers of version 6 read 1 to 5 (no Python tables).
CREATE TABLE python_code (
  image_id    INTEGER NOT NULL,
  serial      INTEGER NOT NULL,       -- the code object's number in its process (ip bits 32-62)
  name        TEXT NOT NULL,          -- co_qualname (3.10: co_name)
  file        TEXT NOT NULL,          -- co_filename
  first_line  INTEGER NOT NULL,       -- co_firstlineno
  version     INTEGER NOT NULL,       -- PY_VERSION_HEX of the interpreter: the line table's format
  linetable   BLOB NOT NULL,          -- co_linetable as the interpreter held it
  PRIMARY KEY (image_id, serial)
) WITHOUT ROWID;

-- When a Python image's interpreter started finalizing (_PyRuntime._finalizing set: the
-- program's own code, atexit handlers included, had finished).
CREATE TABLE python_finalize (
  image_id    INTEGER PRIMARY KEY,
  t_ns        INTEGER NOT NULL
);
-- What was live at that instant, per site (its Python leaks) and per timeline bucket its blocks
-- were allocated in (a site's entries add up to its leaks; a time filter keeps the entries of the
-- buckets it overlaps); what finalization itself left is the image's usual leaks (blocks live at
-- exit, `allocations` rows with t_free NULL).
-- Packed (version 8): a row holds up to 4096 entries of one image, each as unsigned LEB128 varints
--   zigzag(stack_id - the previous entry's stack_id; the first: stack_id itself),
--   kind (the code of schemas/kinds.h),
--   zigzag(bucket - the previous entry's bucket; the first: bucket itself),
--   count, bytes
-- where bucket is the number of the timeline bucket of the blocks' t_alloc: it starts at
-- bucket * bucket_ns (the row's bucket_ns, meta bucket_ns). Sorted by stack id, kind and bucket
-- (schemas/packed_sites.h). A cut or malformed entry is damage: readers refuse the row with an
-- error naming it.
-- Versions 6 and 7 had one row per site and bucket instead:
--   python_finalize_sites(image_id INTEGER NOT NULL, stack_id INTEGER NOT NULL, kind TEXT NOT NULL
--                         (kind name), count INTEGER NOT NULL, bytes INTEGER NOT NULL, t_ns INTEGER
--                         (the bucket's start))
-- t_ns came after the table (files of versions 6 and 7 may lack it): a file without it has one
-- row per site, and readers answer a time filter on it with blocks live at exit.
CREATE TABLE python_finalize_lists (
  id          INTEGER PRIMARY KEY,
  image_id    INTEGER NOT NULL,
  bucket_ns   INTEGER NOT NULL,
  sites       BLOB NOT NULL
);
-- ---- end of version 6's Python block ----
-- ---- leak kinds (version 6, docs/leak-kinds.md) ----
-- The exit scan of an image that ended normally (exit, return from main): the recorder read the
-- waiting process's memory and classified its live heap blocks by memcheck's rules. One row per
-- image the scan was asked for: status 'scanned' (its heap leaks live at the scan have leak_kinds
-- rows) or 'failed' (error says why). An image without a row was not scanned (a crash, _exit,
-- exec, `--scan off`, or a file older than version 6): its leaks are "not classified".
CREATE TABLE leak_scans (
  image_id     INTEGER PRIMARY KEY,
  status       TEXT NOT NULL,
  error        TEXT,
  t_ns         INTEGER NOT NULL,      -- when the scan was asked for
  duration_ns  INTEGER NOT NULL,      -- the scan's time (the process waited this long)
  root_bytes   INTEGER NOT NULL,      -- root memory read (globals, stacks, other mappings)
  block_bytes  INTEGER NOT NULL,      -- heap block contents read
  blocks       INTEGER NOT NULL       -- live heap blocks classified
);
-- The kind of each leaked heap block (malloc/new family) of a scanned image: 0 definite,
-- 1 indirect, 2 possible, 3 reachable. A leaked block without a row: not classified (not a heap
-- kind, or allocated after the scan). Per site: these grouped by the block's stack and kind.
CREATE TABLE leak_kinds (
  allocation_id  INTEGER PRIMARY KEY, -- allocations.id
  kind           INTEGER NOT NULL
);
-- ---- end leak kinds ----

-- @finish: the statements below run when the recording is finished (no per-row index
-- maintenance while recording).
CREATE INDEX allocations_by_time ON allocations (t_alloc);
CREATE INDEX allocations_by_stack ON allocations (stack_id);
