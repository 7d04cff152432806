package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// CursorTTL is how long a list cursor stays valid (SPEC §5.2).
const CursorTTL = 24 * time.Hour

// CursorScope is what a cursor is bound to: a cursor used with any other
// project, inbox, list, thread or search is refused.
type CursorScope struct {
	Project string `json:"p"`
	Inbox   string `json:"i"`
	List    string `json:"l"`
	Thread  string `json:"t,omitempty"`
	Query   string `json:"q,omitempty"`
	Extra   string `json:"x,omitempty"` // other filters (direction)
}

type cursorPayload struct {
	CursorScope
	Expires int64           `json:"e"`
	Key     json.RawMessage `json:"k"`
}

// encodeCursor signs a keyset position for scope.
func (a *App) encodeCursor(scope CursorScope, key any) (string, error) {
	k, err := json.Marshal(key)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(cursorPayload{CursorScope: scope, Expires: a.now().Add(CursorTTL).Unix(), Key: k})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(a.mac(body)), nil
}

// decodeCursor verifies a cursor and unpacks its position into key.
func (a *App) decodeCursor(c string, scope CursorScope, key any) error {
	b64body, b64mac, ok := strings.Cut(c, ".")
	if !ok {
		return ErrInvalidCursor
	}
	body, err1 := base64.RawURLEncoding.DecodeString(b64body)
	mac, err2 := base64.RawURLEncoding.DecodeString(b64mac)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, a.mac(body)) {
		return ErrInvalidCursor
	}
	var p cursorPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return ErrInvalidCursor
	}
	if p.CursorScope != scope || a.now().Unix() >= p.Expires {
		return ErrInvalidCursor
	}
	if err := json.Unmarshal(p.Key, key); err != nil {
		return ErrInvalidCursor
	}
	return nil
}

func (a *App) mac(body []byte) []byte {
	h := hmac.New(sha256.New, a.secret)
	h.Write(body)
	return h.Sum(nil)
}

// Position decodes a list cursor into its keyset position: nil when
// cursor is "", ErrInvalidCursor when it is tampered with, expired, or
// bound to another scope.
func Position[K any](a *App, scope CursorScope, cursor string) (*K, error) {
	if cursor == "" {
		return nil, nil
	}
	k := new(K)
	if err := a.decodeCursor(cursor, scope, k); err != nil {
		return nil, err
	}
	return k, nil
}
