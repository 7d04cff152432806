package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/thread"
)

// Envelope is the SMTP envelope of a received message (SPEC §2).
type Envelope struct {
	MailFrom string
	RcptTo   []string
	RemoteIP string
	Helo     string
	TLS      bool
	AuthUser string
}

// Target is one inbox a received message goes to.
type Target struct {
	// InboxID of an existing inbox; "" asks the writer to create the inbox
	// for Address (acceptance policies domain and any).
	InboxID string
	Address string
	Tag     string // the +tag of the recipient address, "" when none
}

// Incoming is one received message on its way into the store.
type Incoming struct {
	Raw []byte // exactly as received
	// Large holds the bytes as received instead of Raw when they are too
	// large for memory (a spool file); they are stored in chunks. Ingest
	// owns it, and the Large blobs of Parsed's attachments: it closes them
	// once the message is stored or given up.
	Large      message.Blob
	Trace      []byte // our Received: header, prepended to the stored raw
	Parsed     *message.Parsed
	Envelope   Envelope
	Targets    []Target
	ReceivedAt time.Time
	Simulated  bool

	// stored is Raw as contents.data holds it, when Raw was read from
	// there (a local delivery): it is not packed again.
	stored *packedRaw
}

// release closes the spooled parts of the message (see Large).
func (in *Incoming) release() {
	if in.Large != nil {
		in.Large.Close()
	}
	if in.Parsed != nil {
		in.Parsed.Close()
	}
}

// rawLen is the size of the bytes as received.
func (in *Incoming) rawLen() int64 {
	if in.Large != nil {
		return in.Large.Len()
	}
	return int64(len(in.Raw))
}

// rawHash is the SHA-256 of the bytes as received.
func (in *Incoming) rawHash() ([]byte, error) {
	if in.Large == nil {
		return sha(in.Raw), nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, in.Large.Reader()); err != nil {
		return nil, fmt.Errorf("hash message: %w", err)
	}
	return h.Sum(nil), nil
}

// Delivered is the outcome of an ingest for one inbox.
type Delivered struct {
	InboxID   string
	MessageID string
	ThreadID  string
	Sequence  int64
	Match     thread.Match
	// Duplicate reports an SMTP retry of a message already stored: nothing
	// was written, and MessageID and ThreadID are the stored copy's (SPEC
	// §4). With Deferred, the copy is still waiting in the deferred
	// lookup and has no ids yet.
	Duplicate bool
	// Deferred reports a message kept for the deferred parent lookup; it
	// has no message, thread or sequence yet (SPEC §4).
	Deferred bool
}

// prepared is an Incoming with everything that does not need the database
// computed before it reaches the writer.
type prepared struct {
	in         *Incoming
	hash       []byte
	own        string
	generated  bool
	irt, refs  []string
	candidates []thread.Candidate
	cols       messageColumns
	fts        [3]string
	body       []byte    // contents.body, packed (body.go)
	raw        packedRaw // contents.data and raw_format (raw.go)
}

type messageColumns struct {
	from, to, cc, replyTo, irt, refs string
}

// ingestReq returns the writer request that stores p, and where it puts
// the outcome for the caller to read once done has answered.
func (db *DB) ingestReq(p *prepared) (*writeReq, *[]Delivered) {
	var delivered []Delivered
	return &writeReq{
		size: p.in.rawLen(), release: p.in.release, done: make(chan error, 1), marksWakes: true,
		store: func(ctx context.Context, tx *sql.Tx) (err error) {
			delivered, err = db.ingestTx(ctx, tx, p)
			return err
		},
	}, &delivered
}

// Ingest stores one received message in every target inbox, threaded, and
// returns only after the transaction that holds it has committed (the
// durability rule of SPEC §2). Parsing and preparation happen in the
// caller's goroutine; the writer goroutine (Run) commits waiting ingests
// together.
//
// The writer may still read in.Large after Ingest returned ctx's error.
func (db *DB) Ingest(ctx context.Context, in *Incoming) ([]Delivered, error) {
	hash, err := in.rawHash()
	if err != nil {
		in.release()
		return nil, err
	}
	req, delivered := db.ingestReq(db.prepareHashed(in, hash))
	if err := db.enqueue(ctx, req); err != nil {
		in.release()
		return nil, err
	}
	// Queued, the message is the writer's to release.
	select {
	case err := <-req.done:
		if err != nil {
			return nil, err
		}
		db.noteDuplicates(*delivered)
		return *delivered, nil
	case <-ctx.Done():
		// The message may still commit; a retry is then a duplicate.
		return nil, ctx.Err()
	}
}

// prepare prepares an Incoming held in memory (Raw, not Large).
func (db *DB) prepare(in *Incoming) *prepared { return db.prepareHashed(in, sha(in.Raw)) }

func (db *DB) prepareHashed(in *Incoming, hash []byte) *prepared {
	p := &prepared{in: in, hash: hash, body: db.bodies.pack(in.Parsed)}
	switch {
	case in.Large != nil:
		p.raw = packedRaw{data: []byte{}} // the bytes follow in raw_chunks
	case in.stored != nil:
		p.raw = *in.stored
	default:
		p.raw = packRaw(in.Raw)
	}
	m := in.Parsed
	p.own = thread.OwnID(m.MessageID)
	if p.own == "" {
		// Random, never derived from the bytes: two id-less messages are
		// never duplicates of each other (SPEC §3), even when identical.
		p.own = db.randomToken(16) + "@inboxd.invalid"
		p.generated = true
	}
	p.irt = thread.ExtractIDs(m.InReplyTo)
	p.refs = thread.ExtractIDs(m.References)
	p.candidates = thread.Candidates(p.own, p.irt, p.refs)
	p.cols = messageColumns{
		from:    jsonOrNull(m.From),
		to:      jsonList(m.To),
		cc:      jsonList(m.Cc),
		replyTo: jsonList(m.ReplyTo),
		irt:     jsonIDs(p.irt),
		refs:    jsonIDs(p.refs),
	}
	p.fts = searchCols(m.Subject, append(append([]message.Address{}, m.To...), m.Cc...), m.From, m.Text, m.HasText, m.HTML)
	return p
}

type addressJSON struct {
	Email string `json:"email"`
	Name  any    `json:"name"` // null when empty
}

func toAddressJSON(a message.Address) addressJSON {
	j := addressJSON{Email: a.Email}
	if a.Name != "" {
		j.Name = a.Name
	}
	return j
}

func jsonOrNull(a *message.Address) string {
	if a == nil {
		return ""
	}
	b, _ := json.Marshal(toAddressJSON(*a))
	return string(b)
}

func jsonList(as []message.Address) string {
	out := make([]addressJSON, 0, len(as))
	for _, a := range as {
		out = append(out, toAddressJSON(a))
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func jsonIDs(ids []string) string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, "<"+id+">")
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// ingestTx stores one message in each of its target inboxes. A target
// inbox deleted since it was resolved (between RCPT and DATA) is skipped:
// its copy has nowhere to go, and the others must not be lost for it. When
// every target is gone the ingest is ErrNotFound.
func (db *DB) ingestTx(ctx context.Context, tx *sql.Tx, p *prepared) ([]Delivered, error) {
	var out []Delivered
	seen := map[string]bool{}
	gone := 0
	// Each target's inbox, created first where the policy makes one, so
	// that two names of one new inbox (new@ and new+tag@) are known to
	// be the same inbox below.
	ids := make([]string, len(p.in.Targets))
	for i, t := range p.in.Targets {
		ids[i] = t.InboxID
		if ids[i] == "" {
			var err error
			if ids[i], err = db.ensureInbox(ctx, tx, t.Address); err != nil {
				return nil, err
			}
		}
	}
	for i, t := range p.in.Targets {
		inboxID := ids[i]
		// The same inbox named twice (or via two +tags) stores once.
		if seen[inboxID] {
			continue
		}
		scope, exists, err := db.findEventScope(ctx, tx, inboxID)
		if err != nil {
			return nil, err
		}
		if !exists {
			gone++
			continue
		}
		seen[inboxID] = true
		tag := t.Tag
		for j, o := range p.in.Targets {
			if tag != "" {
				break
			}
			if ids[j] == inboxID { // the same inbox also named with a +tag: the copy keeps it
				tag = o.Tag
			}
		}
		d, err := db.ingestOne(ctx, tx, p, scope, inboxID, tag)
		if err != nil {
			return nil, fmt.Errorf("store in %s: %w", inboxID, err)
		}
		out = append(out, d)
	}
	if gone > 0 && len(out) == 0 {
		return nil, fmt.Errorf("ingest: %w", ErrInboxGone)
	}
	return out, nil
}

// ingestOne stores one arriving message in one inbox, or keeps it for the
// deferred parent lookup, or recognises it as a duplicate delivery of a
// message stored or deferred there before.
func (db *DB) ingestOne(ctx context.Context, tx *sql.Tx, p *prepared, scope eventScope, inboxID, tag string) (Delivered, error) {
	dup, err := db.isDeferredDuplicate(ctx, tx, p, inboxID)
	if err != nil {
		return Delivered{}, err
	}
	if dup {
		return Delivered{InboxID: inboxID, Duplicate: true, Deferred: true}, nil
	}
	d, err := db.storeInbound(ctx, tx, p, scope, inboxID, tag, true)
	if err != nil {
		return Delivered{}, err
	}
	if d.Deferred {
		if err := db.deferMessage(ctx, tx, p, inboxID, tag); err != nil {
			return Delivered{}, err
		}
	}
	return d, nil
}

// noteDuplicates logs and counts the duplicate deliveries of a committed
// ingest (SPEC §4: not stored again, but visible).
func (db *DB) noteDuplicates(ds []Delivered) {
	for _, d := range ds {
		if !d.Duplicate {
			continue
		}
		db.log.Info("duplicate delivery not stored", "inbox", d.InboxID, "message", d.MessageID, "deferred", d.Deferred)
		if db.onDuplicate != nil {
			db.onDuplicate()
		}
	}
}

// ensureInbox returns the inbox for address, creating it in the default
// project (acceptance policies domain and any).
func (db *DB) ensureInbox(ctx context.Context, tx *sql.Tx, address string) (string, error) {
	var id string
	err := tx.QueryRowContext(ctx, `SELECT id FROM inboxes WHERE address = ?`, address).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("find inbox: %w", err)
	}
	var projectID string
	if err := tx.QueryRowContext(ctx, `SELECT id FROM projects ORDER BY created_at, id LIMIT 1`).Scan(&projectID); err != nil {
		return "", fmt.Errorf("default project: %w", err)
	}
	ib, err := db.insertInbox(ctx, tx, projectID, NewInbox{Address: address})
	if err != nil {
		return "", err
	}
	return ib.ID, nil
}

// txFinder answers thread.Finder questions for one inbox inside the write
// transaction. It loads every id Assign can ask about in one query up
// front: a message with 50 References costs 1 lookup, not 100.
type txFinder struct {
	own    string
	msgs   map[string]thread.Stored
	copies map[string]thread.Stored // inbound copies of own, by hex digest
	links  map[string]string
}

// The finder's queries take the ids as one JSON array (json_each), so each
// is one prepared statement whatever the number of ids.
const (
	// sqlFindIDs answers both questions in one statement: the stored
	// messages known by the ids (link 0, first copy first), then the
	// missing-parent links among them (link 1).
	// A deleted copy keeps threading its replies but is no longer there
	// to be a duplicate of: its hash is left out, so a redelivery after a
	// delete is stored again.
	// A message is known by its own Message-ID (messages_rfc) and by the
	// aliases an outbound one was given later (message_aliases); copies
	// of the same id answer in the order they were stored.
	sqlFindIDs          = sqlFindStored + ` UNION ALL ` + sqlFindAliased + ` UNION ALL ` + sqlFindLinks + ` ORDER BY link, ord`
	sqlFindIDsNoAliases = sqlFindStored + ` UNION ALL ` + sqlFindLinks + ` ORDER BY link, ord` // while there are no aliases
	sqlFindStored       = `SELECT 0 AS link, m.pk AS ord, m.rfc_message_id, m.id, m.thread_id, m.direction,
			CASE WHEN m.deleted_at IS NULL THEN m.raw_sha256 END
			FROM messages m
			WHERE m.inbox_id = ?1 AND m.rfc_message_id IN (SELECT value FROM json_each(?2))`
	sqlFindAliased = `SELECT 0, m.pk, a.rfc_message_id, m.id, m.thread_id, m.direction, NULL
			FROM message_aliases a JOIN messages m ON m.pk = a.message
			WHERE a.inbox_id = ?1 AND a.rfc_message_id IN (SELECT value FROM json_each(?2))`
	sqlFindLinks = `SELECT 1, 0, rfc_message_id, '', thread_id, '', NULL FROM missing_parents
			WHERE inbox_id = ?1 AND rfc_message_id IN (SELECT value FROM json_each(?2))`
	sqlInsertLinks = `INSERT INTO missing_parents (inbox_id, rfc_message_id, thread_id)
		SELECT ?, value, ? FROM json_each(?) WHERE true ON CONFLICT DO NOTHING`
)

func newTxFinder(ctx context.Context, tx *sql.Tx, db *DB, inboxID, own string, cands []thread.Candidate) (*txFinder, error) {
	ids := make([]string, 0, len(cands)+1)
	ids = append(ids, own)
	for _, c := range cands {
		ids = append(ids, c.ID)
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	f := &txFinder{own: own, msgs: map[string]thread.Stored{}, copies: map[string]thread.Stored{}, links: map[string]string{}}
	find := db.ws.findIDs
	if !db.aliasesMayExist.Load() {
		find = db.ws.findIDsNoAliases // a third less work for most messages
	}
	rows, err := tx.StmtContext(ctx, find).QueryContext(ctx, inboxID, string(list))
	if err != nil {
		return nil, fmt.Errorf("find message ids: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var link bool
		var ord int64
		var id, dir string
		var s thread.Stored
		var hash []byte
		if err := rows.Scan(&link, &ord, &id, &s.MessageID, &s.ThreadID, &dir, &hash); err != nil {
			return nil, fmt.Errorf("find message ids: %w", err)
		}
		if link {
			f.links[id] = s.ThreadID
			continue
		}
		s.Outbound = dir == "outbound"
		if id == own && hash != nil { // inbound: outbound messages have no digest
			h := hex.EncodeToString(hash)
			if _, seen := f.copies[h]; !seen {
				f.copies[h] = s
			}
		}
		if _, seen := f.msgs[id]; !seen { // the first copy answers
			f.msgs[id] = s
		}
	}
	return f, rows.Err()
}

func (f *txFinder) Message(id string) (thread.Stored, bool, error) {
	s, ok := f.msgs[id]
	return s, ok, nil
}

func (f *txFinder) Copy(id, hash string) (thread.Stored, bool, error) {
	if id != f.own {
		return thread.Stored{}, false, nil // only asked about the own id
	}
	s, ok := f.copies[hash]
	return s, ok, nil
}

// linked reports whether id is a missing parent's id.
func (f *txFinder) linked(id string) bool {
	_, ok := f.links[id]
	return ok
}

// newLinks drops the links that already exist: first writer wins, so
// writing them again changes nothing (a long mailing-list References
// header repeats the same ids message after message).
func (f *txFinder) newLinks(links []string) []string {
	out := links[:0:0]
	for _, l := range links {
		if _, ok := f.links[l]; !ok {
			out = append(out, l)
		}
	}
	return out
}

func (f *txFinder) Link(id string) (string, bool, error) {
	t, ok := f.links[id]
	return t, ok, nil
}

// storeInbound threads and stores one inbound message in one inbox, whose
// eventScope the caller looked up in tx. When mayDefer is set and the
// deferred parent lookup applies, it writes nothing and returns Deferred.
func (db *DB) storeInbound(ctx context.Context, tx *sql.Tx, p *prepared, scope eventScope, inboxID, tag string, mayDefer bool) (Delivered, error) {
	f, err := newTxFinder(ctx, tx, db, inboxID, p.own, p.candidates)
	if err != nil {
		return Delivered{}, err
	}
	res, err := thread.Assign(f, thread.Input{
		OwnID: p.own, Candidates: p.candidates, Hash: hex.EncodeToString(p.hash), Inbound: true,
		KeepDuplicates: db.storeDuplicates,
	})
	if err != nil {
		return Delivered{}, err
	}
	if res.Duplicate {
		return Delivered{InboxID: inboxID, MessageID: res.MessageID, ThreadID: res.ThreadID, Duplicate: true}, nil
	}
	if mayDefer && res.Unresolved {
		pending, err := db.hasUnconfirmedOutbound(ctx, tx, inboxID)
		if err != nil {
			return Delivered{}, err
		}
		if pending {
			return Delivered{InboxID: inboxID, Deferred: true}, nil
		}
	}
	d, err := db.insertMessage(ctx, tx, p, messageRow{
		inboxID: inboxID, threadID: res.ThreadID, direction: "inbound", state: "received", match: res.Match,
		echo: res.Echo, tag: tag, bcc: "[]", confirmed: true, createdAt: p.in.ReceivedAt, links: f.newLinks(res.Links),
		ownLinked: f.linked(p.own),
	})
	if err != nil {
		return Delivered{}, err
	}
	if err := db.appendScopedEvent(ctx, tx, scope, inboxID, EventMessageReceived,
		messageEventData(d.MessageID, d.ThreadID, "inbound", d.Sequence, p.in.Simulated, res.Echo)); err != nil {
		return Delivered{}, err
	}
	if err := db.applyDSN(ctx, tx, inboxID, p.in.Parsed.DSN); err != nil {
		return Delivered{}, err
	}
	return d, nil
}

// messageRow is what differs between storing an inbound and an outbound
// message; everything else comes from the prepared message.
type messageRow struct {
	// id and newThreadID are the message's id and its thread's when it
	// opens one; minted here when "" (an ingest mints them in its
	// transaction, a send before it).
	id, newThreadID string
	inboxID         string
	threadID        string // "" opens a new thread
	direction       string
	state           string
	match           thread.Match
	echo            bool
	tag             string
	bcc             string // JSON list
	confirmed       bool   // the Message-ID is final
	approvalID      string
	createdAt       time.Time
	links           []string
	ownLinked       bool // the message's own id was a missing parent when looked up
}

// The statements of insertMessage, prepared at Open (writeStmts), but for
// the chunk rows of large blobs: those are rare, and their bytes cost far
// more than parsing their SQL.
const (
	// None of them has a RETURNING clause: in SQLite it costs more than
	// a second statement (an UPDATE … RETURNING 34 µs against 15 µs
	// without, an INSERT … RETURNING 13 µs against 6 µs with
	// LastInsertId, on the writer's connection).
	sqlInsertThread = `INSERT INTO threads (id, inbox_id, subject, preview, message_count, last_sequence,
			last_message_at, last_message_direction, created_at, has_attachments)
			VALUES (?1, ?2, ?3, ?4, 1, 1, ?5, ?6, ?5, ?7)`
	sqlNextSequence = `UPDATE threads SET last_sequence = last_sequence + 1, message_count = message_count + 1,
			last_message_at = max(last_message_at, ?), preview = ?, last_message_direction = ?,
			has_attachments = has_attachments OR ?
		WHERE id = ?`
	sqlLastSequence  = `SELECT last_sequence FROM threads WHERE id = ?`
	sqlInsertMessage = `INSERT INTO messages (pk, id, inbox_id, thread_id, sequence, direction, state, simulated, echo,
			subject, preview, from_json, to_json, cc_json, bcc_json, reply_to_json, rfc_message_id, rfc_message_id_generated,
			in_reply_to_json, references_json, thread_match, address_tag, parse_error, raw_sha256, raw_size, created_at,
			message_id_confirmed, approval_id, env_mail_from, env_rcpt_to, env_remote_ip, env_helo, env_tls, env_auth_user)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlInsertContents = `INSERT INTO contents (message, trace, body, data, raw_format) VALUES (?, ?, ?, ?, ?)`

	sqlInsertRawChunk        = `INSERT INTO raw_chunks (message_id, seq, data) VALUES (?, ?, ?)`
	sqlInsertAttachmentChunk = `INSERT INTO attachment_chunks (attachment_id, seq, data) VALUES (?, ?, ?)`
	sqlInsertAttachment      = `INSERT INTO attachments (id, message_id, position, filename, content_type, disposition,
				content_id, bytes, scan_status, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// insertMessage stores one message and everything that hangs off it, takes
// the thread's next sequence and records its missing-parent links (SPEC §4
// step 5 applies to every stored message).
func (db *DB) insertMessage(ctx context.Context, tx *sql.Tx, p *prepared, r messageRow) (Delivered, error) {
	m := p.in.Parsed
	now := r.createdAt
	threadID := r.threadID
	seq := int64(1) // a new thread's first message
	if threadID == "" {
		threadID = r.newThreadID
		if threadID == "" {
			threadID = db.newID("thd_")
		}
		if _, err := tx.StmtContext(ctx, db.ws.insertThread).ExecContext(ctx,
			threadID, r.inboxID, m.Subject, m.Preview, ms(now), r.direction, len(m.Attachments) > 0); err != nil {
			return Delivered{}, fmt.Errorf("insert thread: %w", err)
		}
	} else {
		if _, err := tx.StmtContext(ctx, db.ws.nextSequence).ExecContext(ctx, ms(now), m.Preview, r.direction, len(m.Attachments) > 0, threadID); err != nil {
			return Delivered{}, fmt.Errorf("next sequence: %w", err)
		}
		if err := tx.StmtContext(ctx, db.ws.lastSequence).QueryRowContext(ctx, threadID).Scan(&seq); err != nil {
			return Delivered{}, fmt.Errorf("next sequence: %w", err)
		}
	}
	id := r.id
	if id == "" {
		id = db.newID("msg_")
	}
	var hash any = p.hash
	if r.direction == "outbound" {
		hash = nil // duplicates are an inbound notion
	}
	// The SMTP envelope is an inbound message's; the others have none.
	var env [6]any
	if r.direction == "inbound" {
		e := p.in.Envelope
		rcpts, _ := json.Marshal(nonNil(e.RcptTo))
		env = [6]any{e.MailFrom, string(rcpts), e.RemoteIP, e.Helo, e.TLS, nullIfEmpty(e.AuthUser)}
	}
	db.lastPK++ // taken even if this transaction rolls back: a gap is harmless
	rowid := db.lastPK
	_, err := tx.StmtContext(ctx, db.ws.insertMessage).ExecContext(ctx, rowid,
		id, r.inboxID, threadID, seq, r.direction, r.state, p.in.Simulated, r.echo, m.Subject, m.Preview, nullIfEmpty(p.cols.from),
		p.cols.to, p.cols.cc, r.bcc, p.cols.replyTo, p.own, p.generated, p.cols.irt, p.cols.refs, string(r.match),
		nullIfEmpty(r.tag), nullIfEmpty(m.ParseError), hash, p.in.rawLen(), ms(now), r.confirmed, nullIfEmpty(r.approvalID),
		env[0], env[1], env[2], env[3], env[4], env[5])
	if err != nil {
		return Delivered{}, fmt.Errorf("insert message: %w", err)
	}
	if _, err := tx.StmtContext(ctx, db.ws.insertContents).ExecContext(ctx, rowid, append([]byte{}, p.in.Trace...), p.body, p.raw.data, p.raw.format); err != nil {
		return Delivered{}, fmt.Errorf("insert contents: %w", err)
	}
	if p.in.Large != nil {
		if err := insertChunks(ctx, tx, sqlInsertRawChunk, id, p.in.Large.Reader()); err != nil {
			return Delivered{}, fmt.Errorf("insert raw: %w", err)
		}
	}
	for i, a := range m.Attachments {
		attID, data := db.newID("att_"), a.Data
		if a.Large != nil {
			data = []byte{} // the bytes follow in attachment_chunks
		}
		if _, err := tx.StmtContext(ctx, db.ws.insertAttachment).ExecContext(ctx,
			attID, id, i, nullIfEmpty(a.Filename), a.ContentType, a.Disposition, nullIfEmpty(a.ContentID),
			a.Size, a.ScanStatus, data); err != nil {
			return Delivered{}, fmt.Errorf("insert attachment: %w", err)
		}
		if a.Large != nil {
			if err := insertChunks(ctx, tx, sqlInsertAttachmentChunk, attID, a.Large.Reader()); err != nil {
				return Delivered{}, fmt.Errorf("insert attachment: %w", err)
			}
		}
	}
	db.indexLater(searchRow{rowid, p.fts})
	if err := db.recordLinks(ctx, tx, r.inboxID, threadID, p.own, r.links, r.ownLinked); err != nil {
		return Delivered{}, err
	}
	return Delivered{InboxID: r.inboxID, MessageID: id, ThreadID: threadID, Sequence: seq, Match: r.match}, nil
}

// recordLinks applies SPEC §4 step 5: unresolved candidates become
// missing-parent links (first writer wins) and the message's own id stops
// being one.
func (db *DB) recordLinks(ctx context.Context, tx *sql.Tx, inboxID, threadID, own string, links []string, ownLinked bool) error {
	if len(links) > 0 {
		list, err := json.Marshal(links)
		if err != nil {
			return err
		}
		if _, err := tx.StmtContext(ctx, db.ws.insertLinks).ExecContext(ctx, inboxID, threadID, string(list)); err != nil {
			return fmt.Errorf("record missing parent: %w", err)
		}
	}
	if !ownLinked && !slices.Contains(links, own) {
		return nil // nothing to drop: most messages were never referenced before they came
	}
	if _, err := tx.StmtContext(ctx, db.ws.dropLink).ExecContext(ctx, inboxID, own); err != nil {
		return fmt.Errorf("drop missing parent: %w", err)
	}
	return nil
}

// searchRow is a message's row of messages_fts.
type searchRow struct {
	rowid int64
	cols  [3]string // subject, addresses, body
}

// indexLater hands a message's search row to the search indexer when its
// transaction commits (searchindex.go).
func (db *DB) indexLater(r searchRow) { db.search = append(db.search, r) }

const sqlDropLink = `DELETE FROM missing_parents WHERE inbox_id = ? AND rfc_message_id = ?`

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// chunkSize is the size of one stored chunk of a large blob: small enough
// that SQLite's copies of a bound value stay small, large enough that a
// 25 MB message is a hundred rows.
const chunkSize = 256 << 10

// insertChunks stores everything r yields as numbered chunk rows of owner.
func insertChunks(ctx context.Context, tx *sql.Tx, query, owner string, r io.Reader) error {
	buf := make([]byte, chunkSize)
	for seq := 0; ; seq++ {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if _, err := tx.ExecContext(ctx, query, owner, seq, buf[:n]); err != nil {
				return err
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
