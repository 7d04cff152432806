package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/inboxd/inboxd/message"
)

// applyDSN applies an inbound delivery status notification (SPEC §6) to
// the outbound message of inboxID it names: each recipient the report says
// failed becomes bounced. "delayed" and the other actions change nothing.
// It runs in the ingest transaction, so the DSN and its effect commit
// together.
func (db *DB) applyDSN(ctx context.Context, tx *sql.Tx, inboxID string, dsn *message.DSN) error {
	if dsn == nil || dsn.OriginalMessageID == "" {
		return nil
	}
	// A message is known by its own id and by the aliases a relay gave it,
	// so a DSN naming either finds it.
	rows, err := tx.QueryContext(ctx, `SELECT id FROM messages WHERE inbox_id = ?1 AND rfc_message_id = ?2 AND direction = 'outbound'
		UNION
		SELECT m.id FROM message_aliases a JOIN messages m ON m.pk = a.message
			WHERE a.inbox_id = ?1 AND a.rfc_message_id = ?2 AND m.inbox_id = a.inbox_id AND m.direction = 'outbound'`,
		inboxID, dsn.OriginalMessageID)
	if err != nil {
		return fmt.Errorf("find bounced message: %w", err)
	}
	var msgs []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("find bounced message: %w", err)
		}
		msgs = append(msgs, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("find bounced message: %w", err)
	}
	if len(msgs) == 0 {
		return nil
	}
	var results []DeliveryResult
	for _, id := range msgs {
		for _, r := range dsn.Recipients {
			if r.Action != "failed" || r.Email == "" {
				continue
			}
			code := dsnCode(r.Diagnostic, r.Status)
			text := cmp.Or(withoutReplyCode(r.Diagnostic, code), r.Status)
			rows, err := tx.QueryContext(ctx, `SELECT id FROM deliveries WHERE message_id = ? AND lower(email) = lower(?)`, id, r.Email)
			if err != nil {
				return fmt.Errorf("find bounced delivery: %w", err)
			}
			for rows.Next() {
				var d int64
				if err := rows.Scan(&d); err != nil {
					rows.Close()
					return fmt.Errorf("find bounced delivery: %w", err)
				}
				results = append(results, DeliveryResult{ID: d, Status: StatusBounced, Code: code, Message: text})
			}
			rows.Close()
		}
	}
	return db.recordDeliveriesTx(ctx, tx, results)
}

// replyCode finds an SMTP reply code (RFC 5321 §4.2) in a diagnostic: three
// digits not part of a longer number, an IP address or an enhanced status
// code, so "host mx[192.0.2.1] said: 550 5.1.1 …" yields 550.
var replyCode = regexp.MustCompile(`(?:^|[^0-9.])([45][0-9][0-9])(?:[^0-9.]|$)`)

// withoutReplyCode is a diagnostic as a relay's reply is stored (go-smtp's
// SMTPError): without the reply code it starts with ("550 5.1.1 unknown"
// is "5.1.1 unknown"), the code being stored on its own, and a multi-line
// reply ("550-5.1.1 a 550 5.1.1 b", its lines unfolded into one by the
// DSN's header folding) as its lines, each but the first without the code
// and enhanced code it repeats (RFC 2034): "5.1.1 a\nb".
func withoutReplyCode(diagnostic string, code int) string {
	c := strconv.Itoa(code)
	rest, ok := strings.CutPrefix(diagnostic, c)
	if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '-') {
		return diagnostic
	}
	text := strings.TrimSpace(rest[1:])
	if rest[0] == ' ' {
		return text // one line
	}
	prefix := ""
	if enh, _, _ := strings.Cut(text, " "); enhancedCode.MatchString(enh) {
		prefix = enh + " "
	}
	for _, sep := range []string{" " + c + "-", " " + c + " "} {
		text = strings.ReplaceAll(text, sep+prefix, "\n")
	}
	return text
}

// enhancedCode is an RFC 3463 status code, as a reply's first word.
var enhancedCode = regexp.MustCompile(`^[245]\.[0-9]{1,3}\.[0-9]{1,3}$`)

// dsnCode is the SMTP code stored for a bounced recipient: the reply code
// in the diagnostic, else one derived from the status class (RFC 3463
// §3.1: 5.x.x permanent, 4.x.x transient), else 0 (none).
func dsnCode(diagnostic, status string) int {
	if m := replyCode.FindStringSubmatch(diagnostic); m != nil {
		return int(m[1][0]-'0')*100 + int(m[1][1]-'0')*10 + int(m[1][2]-'0')
	}
	switch {
	case len(status) > 1 && status[0] == '5' && status[1] == '.':
		return 550
	case len(status) > 1 && status[0] == '4' && status[1] == '.':
		return 450
	}
	return 0
}
