// Package webhook owns Standard Webhooks signing and the delivery worker:
// the signature scheme receivers verify with any Standard Webhooks library,
// the worker that drains the durable delivery queue the store fills in each
// event's transaction, and the guard that keeps deliveries off private
// networks when the operator asks for it.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/inboxd/inboxd/store"
)

// Header names of the Standard Webhooks specification.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Sign returns the v1 signature of one message: "v1," + base64 of
// HMAC-SHA256 over id + "." + unix seconds + "." + body, keyed with the
// base64-decoded part of the secret after "whsec_".
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := store.WebhookSecretKey(secret)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, ts.Unix(), 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// SignatureHeader is the webhook-signature value for a list of secrets:
// one signature each, space-separated, so that during a rotation a
// receiver holding either the old or the new secret verifies.
func SignatureHeader(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		sig, err := Sign(s, id, ts, body)
		if err != nil {
			return "", err
		}
		sigs = append(sigs, sig)
	}
	return strings.Join(sigs, " "), nil
}

// NewSecret returns "whsec_" + base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return store.WebhookSecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ValidateSecret reports whether a supplied secret is "whsec_" + base64 of
// 24 to 64 bytes.
func ValidateSecret(secret string) error {
	if _, err := store.WebhookSecretKey(secret); err != nil {
		return fmt.Errorf("validate secret: %w", err)
	}
	return nil
}
