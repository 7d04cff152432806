-- An event cursor stays valid for the retention period (SPEC §8), also
-- when retention removed the event it names: events_pruned_through is the
-- last seq pruned from the project's log, so a cursor there has missed
-- nothing and reads on from the oldest retained event. (One further back
-- missed what was pruned after it, and stays invalid_cursor.) Logs pruned
-- before this migration start from events_floor, the last seq pruned from
-- any project's log: exact with one project.
ALTER TABLE projects ADD COLUMN events_pruned_through INTEGER NOT NULL DEFAULT 0;
UPDATE projects SET events_pruned_through = (SELECT seq FROM events_floor);
