package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inboxd/inboxd/message"
)

// ValidInboxAddress reports whether address can name an inbox:
// user@domain as net/mail reads it back unchanged, no +tag (a tag is kept
// on the message, SPEC §2), a domain ValidDomain accepts. POST /inboxes
// and the accept policies that create inboxes over SMTP both hold to it.
func ValidInboxAddress(address string) bool {
	addr, err := mail.ParseAddress(address)
	local, domain, ok := strings.Cut(address, "@")
	return err == nil && addr.Address == address && ok && local != "" && !strings.Contains(local, "+") && ValidDomain(domain)
}

// ValidDomain reports whether d can be a mail domain here (an inbox's, an
// allowed_domains entry).
func ValidDomain(d string) bool {
	return d != "" && !strings.ContainsAny(d, " \t\r\n@<>\"") && !strings.HasPrefix(d, ".") && !strings.HasSuffix(d, ".")
}

// Inbox is one address on this gateway.
type Inbox struct {
	ID             string
	ProjectID      string
	Address        string
	DisplayName    string
	Environment    string
	SendPolicy     string
	AllowedDomains []string
	CreatedAt      time.Time
	// DeferredCount is how many inbound messages the deferred parent
	// lookup holds for the inbox (SPEC §4: held mail is visible).
	DeferredCount int64
}

// NewInbox is the input of CreateInbox.
type NewInbox struct {
	Address        string
	DisplayName    string
	Environment    string // "live" when empty
	SendPolicy     string // "allow" when empty
	AllowedDomains []string
}

// CreateInbox creates an inbox; an address already in use is ErrConflict.
func (db *DB) CreateInbox(ctx context.Context, projectID string, in NewInbox) (Inbox, error) {
	var ib Inbox
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		ib, err = db.insertInbox(ctx, tx, projectID, in)
		return err
	})
	if err != nil {
		return Inbox{}, fmt.Errorf("create inbox: %w", err)
	}
	return ib, nil
}

func (db *DB) insertInbox(ctx context.Context, tx *sql.Tx, projectID string, in NewInbox) (Inbox, error) {
	ib := Inbox{
		ID: db.newID("ibx_"), ProjectID: projectID, Address: strings.ToLower(in.Address),
		DisplayName: in.DisplayName, Environment: in.Environment, SendPolicy: in.SendPolicy,
		AllowedDomains: in.AllowedDomains, CreatedAt: db.now().UTC().Truncate(time.Millisecond),
	}
	if ib.Environment == "" {
		ib.Environment = "live"
	}
	if ib.SendPolicy == "" {
		ib.SendPolicy = "allow"
	}
	if ib.AllowedDomains == nil {
		ib.AllowedDomains = []string{}
	}
	domains, _ := json.Marshal(ib.AllowedDomains)
	db.inboxesChanged = true
	_, err := tx.ExecContext(ctx, `INSERT INTO inboxes (id, project_id, address, display_name, environment, send_policy, allowed_domains, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		ib.ID, projectID, ib.Address, ib.DisplayName, ib.Environment, ib.SendPolicy, string(domains), ms(ib.CreatedAt))
	if isConstraint(err) {
		return Inbox{}, fmt.Errorf("inbox %s: %w", ib.Address, ErrConflict)
	}
	if err != nil {
		return Inbox{}, fmt.Errorf("insert inbox: %w", err)
	}
	return ib, nil
}

const inboxColumns = `id, project_id, address, display_name, environment, send_policy, allowed_domains, created_at,
	(SELECT count(*) FROM deferred_messages d WHERE d.inbox_id = inboxes.id) AS deferred_count`

func scanInbox(row rowScanner) (Inbox, error) {
	var sc inboxScan
	if err := row.Scan(sc.dest()...); err != nil {
		return Inbox{}, err
	}
	return sc.inbox()
}

// inboxScan holds the inboxColumns of a row while it is scanned.
type inboxScan struct {
	ib      Inbox
	domains string
	created int64
}

func (sc *inboxScan) dest() []any {
	ib := &sc.ib
	return []any{&ib.ID, &ib.ProjectID, &ib.Address, &ib.DisplayName, &ib.Environment, &ib.SendPolicy, &sc.domains, &sc.created,
		&ib.DeferredCount}
}

func (sc *inboxScan) inbox() (Inbox, error) {
	ib := sc.ib
	if err := json.Unmarshal([]byte(sc.domains), &ib.AllowedDomains); err != nil {
		return Inbox{}, fmt.Errorf("inbox %s allowed_domains: %w", ib.ID, err)
	}
	ib.CreatedAt = fromMS(sc.created)
	return ib, nil
}

// ListInboxes returns the project's inboxes, oldest first.
func (db *DB) ListInboxes(ctx context.Context, projectID string) ([]Inbox, error) {
	return db.InboxesAfter(ctx, projectID, nil, -1)
}

// InboxesAfter returns up to limit (−1: every) inboxes of the project,
// oldest first, strictly after the position after.
func (db *DB) InboxesAfter(ctx context.Context, projectID string, after *TimeKey, limit int) ([]Inbox, error) {
	page, args := createdPage(after, limit, projectID)
	rows, err := db.r.QueryContext(ctx, `SELECT `+inboxColumns+` FROM inboxes WHERE project_id = ?`+page, args...)
	return scanAll(rows, err, "list inboxes", scanInbox)
}

// sqlInboxByAddress finds an inbox by address, on the read pool (a
// recipient lookup reads less: sqlRecipient).
const sqlInboxByAddress = `SELECT ` + inboxColumns + ` FROM inboxes WHERE address = ?`

// InboxByAddress finds an inbox by its address, case-insensitively.
func (db *DB) InboxByAddress(ctx context.Context, address string) (Inbox, error) {
	ib, err := scanInbox(db.readRow(ctx, sqlInboxByAddress, address))
	if errors.Is(err, sql.ErrNoRows) {
		return Inbox{}, fmt.Errorf("inbox %s: %w", address, ErrNotFound)
	}
	if err != nil {
		return Inbox{}, fmt.Errorf("inbox by address: %w", err)
	}
	return ib, nil
}

// DeleteInbox deletes an inbox and, through ON DELETE CASCADE, all its data.
func (db *DB) DeleteInbox(ctx context.Context, projectID, inboxID string) error {
	return db.tx(ctx, func(tx *sql.Tx) error {
		// The contentless FTS table has no foreign key: clear it first.
		if err := dropSearchRows(ctx, tx, `m.inbox_id = ?`, inboxID); err != nil {
			return err
		}
		db.inboxesChanged = true
		res, err := tx.ExecContext(ctx, `DELETE FROM inboxes WHERE id = ? AND project_id = ?`, inboxID, projectID)
		if err != nil {
			return fmt.Errorf("delete inbox: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("delete inbox %s: %w", inboxID, ErrNotFound)
		}
		return nil
	})
}

// GetInbox returns one inbox of a project.
func (db *DB) GetInbox(ctx context.Context, projectID, inboxID string) (Inbox, error) {
	ib, err := scanInbox(db.readRow(ctx, `SELECT `+inboxColumns+` FROM inboxes WHERE id = ? AND project_id = ?`, inboxID, projectID))
	if errors.Is(err, sql.ErrNoRows) {
		return Inbox{}, fmt.Errorf("inbox %s: %w", inboxID, ErrNotFound)
	}
	if err != nil {
		return Inbox{}, fmt.Errorf("get inbox: %w", err)
	}
	return ib, nil
}

// InboxPatch holds the fields of an inbox update; nil leaves a field.
type InboxPatch struct {
	DisplayName    *string
	SendPolicy     *string
	AllowedDomains *[]string
}

// UpdateInbox applies a patch and returns the inbox.
func (db *DB) UpdateInbox(ctx context.Context, projectID, inboxID string, p InboxPatch) (Inbox, error) {
	var ib Inbox
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var domains any
		if p.AllowedDomains != nil {
			b, _ := json.Marshal(nonNil(*p.AllowedDomains))
			domains = string(b)
		}
		db.inboxesChanged = true
		var err error
		ib, err = scanInbox(tx.QueryRowContext(ctx, `UPDATE inboxes SET display_name = coalesce(?, display_name),
				send_policy = coalesce(?, send_policy), allowed_domains = coalesce(?, allowed_domains)
			WHERE id = ? AND project_id = ? RETURNING `+inboxColumns, p.DisplayName, p.SendPolicy, domains, inboxID, projectID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("inbox %s: %w", inboxID, ErrNotFound)
		}
		return err
	})
	if err != nil {
		return Inbox{}, fmt.Errorf("update inbox: %w", err)
	}
	return ib, nil
}

// sqlRecipient is what a recipient lookup needs of an inbox: SMTP asks it
// for every RCPT, and the whole inbox (with its deferred count) cost
// twice as much.
const sqlRecipient = `SELECT id, address FROM inboxes WHERE address = ?`

// LookupRecipient finds the inbox an address reaches: the exact address,
// else user@domain for user+tag@domain (SPEC §2), as a Target with the tag
// as sent. ErrNotFound otherwise.
func (db *DB) LookupRecipient(ctx context.Context, address string) (Target, error) {
	gen := db.recipients.gen.Load() // before the read: see recipientCache
	if a, ok := db.recipients.get(address, gen); ok {
		return a.t, nil
	}
	t, err := resolveRecipient(address, func(a string) *sql.Row { return db.readRow(ctx, sqlRecipient, a) })
	if err == nil {
		db.recipients.put(address, recipientAnswer{gen: gen, t: t})
	}
	return t, err
}

// noticeOtherWriters moves the recipient cache to a new generation when
// another process has committed since the last call: the CLI creates and
// deletes inboxes beside a running server, and its commits set no
// inboxesChanged here. Run calls it every indexDelay, so an answer
// another process made stale is served for that long at most (an address
// that did not exist is never cached: an inbox the CLI creates is found
// at once). It reads PRAGMA data_version on the writer connection, which
// no other connection of this process writes through.
func (db *DB) noticeOtherWriters(ctx context.Context) {
	var v int64
	if err := db.w.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
		db.log.Error("data version", "err", err)
		return
	}
	if v != db.othersVersion {
		db.othersVersion = v
		db.recipients.gen.Add(1)
	}
}

// recipientCache keeps LookupRecipient's answers. SMTP asks for every RCPT,
// and the read of the inboxes table behind an answer cost 44 µs of the
// session's CPU per 4 KB message, 5 % of the process (issue 18).
//
// Only inboxes found are kept; an answer holds for one generation: a
// transaction that changes the inboxes table (inboxesChanged) moves to the
// next once it has committed (DB.tx), and so does another process's
// commit once noticeOtherWriters sees it. An answer is filed under the
// generation read before its query, so one read while such a commit was
// under way is ended by that commit's move, and an answer is never older
// than the last committed change of this process. The in-transaction
// lookup of local deliveries (lookupRecipientTx) is not cached.
type recipientCache struct {
	gen atomic.Uint64

	mu      sync.Mutex
	answers map[string]recipientAnswer // by the address as asked
}

type recipientAnswer struct {
	gen uint64
	t   Target
}

// recipientCacheMax bounds the answers kept: past it, the cache starts
// over (mail to many +tags of an inbox, mostly).
const recipientCacheMax = 4096

func (c *recipientCache) get(address string, gen uint64) (recipientAnswer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.answers[address]
	return a, ok && a.gen == gen
}

func (c *recipientCache) put(address string, a recipientAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answers == nil || len(c.answers) >= recipientCacheMax {
		c.answers = map[string]recipientAnswer{}
	}
	c.answers[address] = a
}

// lookupRecipientTx is LookupRecipient in the writer's transaction tx.
func (db *DB) lookupRecipientTx(ctx context.Context, tx *sql.Tx, address string) (Target, error) {
	return resolveRecipient(address, func(a string) *sql.Row {
		return tx.StmtContext(ctx, db.ws.recipient).QueryRowContext(ctx, a)
	})
}

// resolveRecipient finds the inbox of an address: the exact address, else
// the one its +tag reaches (message.SplitTag), with the tag as sent.
func resolveRecipient(address string, find func(string) *sql.Row) (Target, error) {
	lookup := func(a, tag string) (Target, error) {
		t := Target{Tag: tag}
		err := find(a).Scan(&t.InboxID, &t.Address)
		if errors.Is(err, sql.ErrNoRows) {
			return Target{}, fmt.Errorf("inbox %s: %w", a, ErrNotFound)
		}
		if err != nil {
			return Target{}, fmt.Errorf("inbox by address: %w", err)
		}
		return t, nil
	}
	exact := strings.ToLower(strings.TrimSpace(address))
	t, err := lookup(exact, "")
	if !errors.Is(err, ErrNotFound) {
		return t, err
	}
	base, tag := message.SplitTag(address)
	if base == exact { // no +tag to look through
		return Target{}, err
	}
	return lookup(base, tag)
}

// HasInboxAtDomain reports whether some inbox's address is at domain
// (compared case-insensitively): the gateway serves that domain.
func (db *DB) HasInboxAtDomain(ctx context.Context, domain string) (bool, error) {
	var ok bool
	err := db.readRow(ctx, sqlInboxAtDomain, "@"+domain).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("inbox at domain: %w", err)
	}
	return ok, nil
}

// sqlInboxAtDomain compares the end of each address, so a domain with %
// or _ in it is not a pattern. Inboxes are few; the scan is cheap.
const sqlInboxAtDomain = `SELECT EXISTS (SELECT 1 FROM inboxes WHERE substr(address, -length(?1)) = ?1 COLLATE NOCASE)`
