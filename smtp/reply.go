package smtp

import (
	"errors"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/inboxd/inboxd/store"
)

// The replies of the server: every refusal it answers is one of these
// errors, and reply is the one function that turns an outcome (ours, the
// store's, the send path's) into what the client reads.

// ErrSenderNotAllowed is a submission whose From is not an inbox the key
// may send from; the client hears 550 5.7.1.
var ErrSenderNotAllowed = errors.New("smtp: From is not an inbox this key may send from")

// errKeyRevoked answers a transaction of a session whose key is no longer
// valid (RFC 4954 §6); the session cannot AUTH again (go-smtp allows one
// AUTH per session), so 530 "authentication required" would mislead.
var errKeyRevoked = &gosmtp.SMTPError{Code: 535, EnhancedCode: gosmtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}

// errNestedMail answers a MAIL inside an open transaction (RFC 5321
// §4.1.1.2: the transaction must be ended by DATA or RSET first).
var errNestedMail = &gosmtp.SMTPError{Code: 503, EnhancedCode: gosmtp.EnhancedCode{5, 5, 1}, Message: "Nested MAIL command"}

var (
	errUnknownRecipient = &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.EnhancedCode{5, 1, 1}, Message: "No such mailbox here"}
	errRelayDenied      = &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.EnhancedCode{5, 7, 1}, Message: "Relaying denied"}
	// errNoInboxAddress answers, under an accept policy that creates
	// inboxes, an address no inbox can have: unknown, whatever its domain
	// (so never "Relaying denied").
	errNoInboxAddress   = &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.EnhancedCode{5, 1, 1}, Message: "No such mailbox here: not an inbox address"}
	errSenderNotAllowed = &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.EnhancedCode{5, 7, 1}, Message: "From is not an inbox this key may send from"}
)

// errDataCut answers (for the record: the client is gone) data that ended
// with the connection instead of CRLF.CRLF.
var errDataCut = &gosmtp.SMTPError{Code: 451, EnhancedCode: gosmtp.EnhancedCode{4, 4, 2}, Message: "Connection lost before the end of the data"}

var errLineTooLong = &gosmtp.SMTPError{
	Code: 500, EnhancedCode: gosmtp.EnhancedCode{5, 5, 2}, Message: "Line too long",
}

var errLocal = &gosmtp.SMTPError{
	Code: 451, EnhancedCode: gosmtp.EnhancedCode{4, 3, 0},
	Message: "Requested action aborted: local error in processing, try again later",
}

// reply is the one place an outcome becomes an SMTP reply. go-smtp turns
// any error that is not a bare *SMTPError (even a wrapped one) into a
// permanent 554 carrying its text, which would bounce good mail and leak
// internals; so client faults are passed on as the bare value and every
// other failure is ours: 451 4.3.0 with no internal text, logged here.
func (s *Server) reply(stage string, err error) error {
	if err == nil {
		return nil
	}
	var se *gosmtp.SMTPError
	if errors.As(err, &se) {
		return se
	}
	if errors.Is(err, gosmtp.ErrTooLongLine) {
		return errLineTooLong
	}
	if errors.Is(err, store.ErrInboxGone) { // the transaction's inboxes were deleted since RCPT
		return errUnknownRecipient
	}
	if errors.Is(err, ErrSenderNotAllowed) {
		return errSenderNotAllowed
	}
	s.log.Error("smtp: local failure", "stage", stage, "err", err)
	return errLocal
}

// errShuttingDown answers a command once Shutdown has begun (SPEC §13).
var errShuttingDown = &gosmtp.SMTPError{Code: 421, EnhancedCode: gosmtp.EnhancedCode{4, 3, 2}, Message: "Service shutting down"}

// errDataTimeout is a stalled data phase. go-smtp answers a BDAT chunk's
// read error with a permanent 554 carrying the error text (addresses
// included) unless the error is a bare *SMTPError; so limitConn returns
// this in place of the timeout while the session is in data.
var errDataTimeout = &gosmtp.SMTPError{Code: 451, EnhancedCode: gosmtp.EnhancedCode{4, 4, 2}, Message: "Timeout waiting for data"}
