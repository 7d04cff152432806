-- Deleting a full-text row never starts an FTS5 merge any more. With
-- deletemerge 50 (0015) the merges that retention's deletes started still
-- ran inside the writer's statements, 20–45 ms each, and the ingests
-- queued behind them waited. The retention round now merges the deleted
-- entries away itself, in bounded slices while no ingest waits
-- (mergeSearchSlice), with deletemerge set for those slices alone.
INSERT INTO messages_fts (messages_fts, rank) VALUES ('deletemerge', 0);
