// Package webhook owns Standard Webhooks secrets, signing and the delivery
// worker: the whsec_ secret format (the store keeps the strings it is
// given), the signature scheme receivers verify with any Standard Webhooks library,
// the worker that drains the durable delivery queue the store fills in each
// event's transaction, and the guard that keeps deliveries off private
// networks when the operator asks for it.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Header names of the Standard Webhooks specification.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every Standard Webhooks secret.
const SecretPrefix = "whsec_"

// ErrBadSecret is a secret that is not whsec_ + base64 of 24–64 bytes.
var ErrBadSecret = errors.New("webhook secret must be whsec_ followed by the base64 of 24 to 64 bytes")

// NewSecret returns "whsec_" + base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ValidateSecret checks a secret a client supplied: nil, or ErrBadSecret
// unless it is "whsec_" + base64 of 24 to 64 bytes.
func ValidateSecret(secret string) error {
	_, err := secretKey(secret)
	return err
}

// secretKey returns the HMAC key of a whsec_ secret (SPEC §9: the
// base64-decoded part after the prefix), or ErrBadSecret.
func secretKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, ErrBadSecret
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) < 24 || len(key) > 64 {
		return nil, ErrBadSecret
	}
	return key, nil
}

// Sign returns the v1 signature of one message: "v1," + base64 of
// HMAC-SHA256 over id + "." + unix seconds + "." + body, keyed with the
// base64-decoded part of the secret after "whsec_".
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := secretKey(secret)
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
