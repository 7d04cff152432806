package message

import (
	"os"
	"reflect"
	"testing"
)

func TestParseDSN(t *testing.T) {
	// report builds a multipart/report around a delivery-status body and an
	// optional returned part, with bare LF line ends.
	report := func(ctParams, status, returned string) string {
		s := "From: MAILER-DAEMON@mx.example\nSubject: bounce\nContent-Type: multipart/report; " + ctParams + "boundary=b\n\n" +
			"--b\nContent-Type: text/plain\n\nIt bounced.\n" +
			"--b\nContent-Type: message/delivery-status\n\n" + status + "\n"
		if returned != "" {
			s += "--b\n" + returned + "\n"
		}
		return s + "--b--\n"
	}
	const typed = "report-type=delivery-status; "
	for _, tc := range []struct {
		name string
		file string // under testdata/golden; else raw
		raw  string
		want *DSN
	}{
		{
			name: "postfix, CRLF, two recipients, folded diagnostics",
			file: "synthetic-postfix-dsn.eml",
			want: &DSN{OriginalMessageID: "01JNMV6Q7M2V5D6T8W9XBCFGHN@inboxd.example", Recipients: []DSNRecipient{
				{Email: "nobody@example.com", Action: "failed", Status: "5.1.1",
					Diagnostic: "550 5.1.1 <nobody@example.com>: Recipient address rejected: User unknown in virtual mailbox table"},
				{Email: "Someone@nowhere.invalid", Action: "failed", Status: "5.4.4",
					Diagnostic: "Host or domain name not found. Name service error for name=nowhere.invalid type=AAAA: Host not found"},
			}},
		},
		{
			name: "exim, bare LF, Action before Final-Recipient",
			file: "synthetic-exim-dsn-bare-lf.eml",
			want: &DSN{OriginalMessageID: "01JNMVA4XK3R7S0Y2Z5PQ8TW1E@inboxd.example", Recipients: []DSNRecipient{
				{Email: "ghost@example.net", Action: "failed", Status: "5.0.0",
					Diagnostic: "550 5.1.1 <ghost@example.net>: Recipient address rejected: User unknown in local recipient table"},
			}},
		},
		{
			name: "CPython msg_16: Sun SIMS, no report-type, upper-case part types",
			file: "cpython-msg_16-dsn-no-report-type.eml",
			want: &DSN{OriginalMessageID: "002001c144a6$8752e060$56104586@oxy.edu", Recipients: []DSNRecipient{
				{Email: "jangel1@cougar.noc.ucla.edu", Action: "failed", Status: "5.0.0"},
			}},
		},
		{
			name: "CPython msg_43: many recipients, text/rfc822-headers",
			file: "cpython-msg_43-dsn-rfc822-headers.eml",
			want: func() *DSN {
				d := &DSN{OriginalMessageID: "edab.7804f5cb8070@python.org"}
				for _, e := range []string{"xxxxxxx", "xxxxxxxxxxxxx", "xxxxxxxxxx", "xxxxxxxx", "xxxxxxxxxx", "xxxxxx", "xxxxxxxxxx",
					"xxxxxx", "xxxxxx", "xxxxxxxxxxxxxxxx", "xxxxxxxxxxx", "xxxxxxxxxx", "xxxxxxxxxx", "xxxxxxxxxxxx", "xxxxxxxxxxxx",
					"xxxxxxx", "xxxxxxxxx", "xxxxxxxxxx", "xxxxxx", "xxx", "xxxxxxx", "xxxxxxx", "xxxxxxxxxxxxxxx", "xxxxxxxxxx", "xxxxxxx"} {
					d.Recipients = append(d.Recipients, DSNRecipient{Email: e + "@dot.ca.gov", Action: "failed", Status: "5.7.1",
						Diagnostic: "550 5.7.1 Message content rejected, id=01956-02-2 - BANNED: auto__mail.python.bat"})
				}
				return d
			}(),
		},
		{
			name: "CPython msg_25: boundary parameter truncated, nothing to read",
			file: "cpython-msg_25-dsn-truncated-boundary.eml",
		},
		{
			name: "CPython msg_05: report without a delivery-status part",
			file: "cpython-msg_05-delivery-report.eml",
			want: &DSN{Recipients: []DSNRecipient{}},
		},
		{
			name: "enmime: RFC 3464 example, failed and delayed, folded diagnostic",
			file: "enmime-dsn-multi-recipient.eml",
			want: &DSN{Recipients: []DSNRecipient{
				{Email: "arathib@vnet.ibm.com", Action: "failed", Status: "5.0.0", Diagnostic: "550 'arathib@vnet.IBM.COM' is not a registered gateway user"},
				{Email: "johnh@hpnjld.njd.hp.com", Action: "delayed", Status: "4.0.0"},
				{Email: "wsnell@sdcc13.ucsd.edu", Action: "failed", Status: "5.0.0", Diagnostic: "550 user unknown"},
			}},
		},
		{
			name: "enmime: delay warning",
			file: "enmime-dsn-delayed.eml",
			want: &DSN{Recipients: []DSNRecipient{{Email: "thomas@de-montfort.ac.uk", Action: "delayed", Status: "4.0.0"}}},
		},
		{
			name: "enmime: Exchange Online, multipart/alternative explanation",
			file: "enmime-dsn-alternative.eml",
			want: &DSN{Recipients: []DSNRecipient{
				{Email: "non-existing@example.com", Action: "failed", Status: "5.1.10", Diagnostic: "550 5.1.10 RESOLVER.ADR.RecipientNotFound"},
			}},
		},
		{
			name: "no per-message block, Original-Recipient only, bracketed address",
			raw: report(typed, "Original-Recipient: rfc822;<Bob@Example.COM>\nAction: Failed (bad mailbox)\nStatus: 5.1.1 (no such user)\n"+
				"Diagnostic-Code: smtp;550 no such user; try again\n",
				"Content-Type: text/rfc822-headers\n\nFrom: a@inboxd.example\nMessage-ID:\n <orig@inboxd.example>\n"),
			want: &DSN{OriginalMessageID: "orig@inboxd.example", Recipients: []DSNRecipient{
				{Email: "Bob@Example.COM", Action: "failed", Status: "5.1.1", Diagnostic: "550 no such user; try again"},
			}},
		},
		{
			name: "untyped address and diagnostic, bare Message-ID",
			raw: report(typed, "Reporting-MTA: dns; mx\n\nFinal-Recipient: carol@example.com\nAction: failed\nStatus: 5.0.0\n"+
				"Diagnostic-Code: 550 mailbox unavailable; quota\n",
				"Content-Type: message/rfc822\n\nMessage-ID: bare@inboxd.example\n\nbody\n"),
			want: &DSN{OriginalMessageID: "bare@inboxd.example", Recipients: []DSNRecipient{
				{Email: "carol@example.com", Action: "failed", Status: "5.0.0", Diagnostic: "550 mailbox unavailable; quota"},
			}},
		},
		{
			name: "base64 delivery-status, stray lines, duplicate and missing fields",
			raw: "Content-Type: multipart/report; report-type=delivery-status; boundary=b\n\n--b\n" +
				"Content-Type: message/delivery-status\nContent-Transfer-Encoding: base64\n\n" +
				"UmVwb3J0aW5nLU1UQTogZG5zOyBteAoKZ2FyYmFnZSBsaW5lCkZpbmFsLVJlY2lwaWVudDogcmZj\n" +
				"ODIyOyBkQGV4YW1wbGUuY29tCkFjdGlvbjogZmFpbGVkCkFjdGlvbjogZGVsaXZlcmVkCgpBY3Rp\n" +
				"b246IGZhaWxlZApTdGF0dXM6IDUuMC4wCg==\n" +
				"--b--\n",
			want: &DSN{Recipients: []DSNRecipient{{Email: "d@example.com", Action: "failed"}}},
		},
		{
			name: "report nested in multipart/mixed",
			raw: "Content-Type: multipart/mixed; boundary=outer\n\n--outer\n" +
				"Content-Type: multipart/report; report-type=delivery-status; boundary=b\n\n" +
				"--b\nContent-Type: message/delivery-status\n\nFinal-Recipient: rfc822; e@example.com\nAction: failed\n\n--b--\n--outer--\n",
			want: &DSN{Recipients: []DSNRecipient{{Email: "e@example.com", Action: "failed"}}},
		},
		{
			name: "read receipt is not a DSN",
			raw: "Content-Type: multipart/report; report-type=disposition-notification; boundary=b\n\n" +
				"--b\nContent-Type: message/disposition-notification\n\nFinal-Recipient: rfc822; f@example.com\nDisposition: manual-action/MDN-sent-manually; displayed\n--b--\n",
		},
		{
			name: "untyped report without delivery-status part is not a DSN",
			raw:  "Content-Type: multipart/report; boundary=b\n\n--b\nContent-Type: text/plain\n\nhello\n--b--\n",
		},
		{
			name: "a forwarded bounce is not a DSN",
			raw: "Content-Type: multipart/mixed; boundary=m\n\n--m\nContent-Type: text/plain\n\nFYI\n--m\nContent-Type: message/rfc822\n\n" +
				report(typed, "Final-Recipient: rfc822; g@example.com\nAction: failed\n", "") + "--m--\n",
		},
		{
			name: "plain message",
			raw:  "Subject: hi\n\nFinal-Recipient: rfc822; h@example.com\nAction: failed\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := []byte(tc.raw)
			if tc.file != "" {
				var err error
				if raw, err = os.ReadFile("testdata/golden/" + tc.file); err != nil {
					t.Fatal(err)
				}
			}
			p := Parse(raw)
			checkInvariants(t, tc.name, p)
			if !reflect.DeepEqual(p.DSN, tc.want) {
				t.Errorf("DSN\n got %+v\nwant %+v", p.DSN, tc.want)
			}
			if tc.want != nil && len(tc.want.Recipients) > 0 {
				// The report's parts stay attachments (SPEC §3: nothing is lost).
				found := false
				for _, a := range p.Attachments {
					found = found || a.ContentType == "message/delivery-status"
				}
				if !found {
					t.Errorf("delivery-status part not kept as an attachment: %+v", p.Attachments)
				}
			}
		})
	}
}
