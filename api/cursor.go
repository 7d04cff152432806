package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/inboxd/inboxd/app"
)

// cursorTTL is how long a list cursor stays valid (SPEC §5.2).
const cursorTTL = 24 * time.Hour

// cursorScope is what a cursor is bound to: a cursor used with any other
// project, inbox, list, thread or search is refused.
type cursorScope struct {
	Project string `json:"p"`
	Inbox   string `json:"i"`
	List    string `json:"l"`
	Thread  string `json:"t,omitempty"`
	Query   string `json:"q,omitempty"`
	Extra   string `json:"x,omitempty"` // other filters (direction)
}

type cursorPayload struct {
	cursorScope
	Expires int64           `json:"e"`
	Key     json.RawMessage `json:"k"`
}

// encodeCursor signs a keyset position for scope.
func (s *Server) encodeCursor(scope cursorScope, key any) (string, error) {
	k, err := json.Marshal(key)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(cursorPayload{cursorScope: scope, Expires: s.now().Add(cursorTTL).Unix(), Key: k})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(s.mac(body)), nil
}

// decodeCursor verifies a cursor and unpacks its position into key.
func (s *Server) decodeCursor(c string, scope cursorScope, key any) error {
	b64body, b64mac, ok := strings.Cut(c, ".")
	if !ok {
		return app.ErrInvalidCursor
	}
	body, err1 := base64.RawURLEncoding.DecodeString(b64body)
	mac, err2 := base64.RawURLEncoding.DecodeString(b64mac)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, s.mac(body)) {
		return app.ErrInvalidCursor
	}
	var p cursorPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return app.ErrInvalidCursor
	}
	if p.cursorScope != scope || s.now().Unix() >= p.Expires {
		return app.ErrInvalidCursor
	}
	if err := json.Unmarshal(p.Key, key); err != nil {
		return app.ErrInvalidCursor
	}
	return nil
}

func (s *Server) mac(body []byte) []byte {
	h := hmac.New(sha256.New, s.secret)
	h.Write(body)
	return h.Sum(nil)
}
