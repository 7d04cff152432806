-- Whether any message of the thread has an attachment: the thread-messages
-- page looks attachments up only for threads that have some.
ALTER TABLE threads ADD COLUMN has_attachments INTEGER NOT NULL DEFAULT 0;
UPDATE threads SET has_attachments = 1
	WHERE id IN (SELECT m.thread_id FROM attachments a JOIN messages m ON m.id = a.message_id);
