package message

import (
	"regexp"
	"strings"
)

// Reply headers ("attribution lines") that clients put above quoted
// history, by language. Each must match a whole line (or two joined lines,
// for clients that wrap long attributions).
var attributionLines = []*regexp.Regexp{
	regexp.MustCompile(`^On\b.{1,300}\bwrote:$`),                                // English
	regexp.MustCompile(`^Am\b.{1,300}\bschrieb\b.{0,200}:$`),                    // German
	regexp.MustCompile(`^Le\b.{1,300}\ba\s+écrit[\s\x{00a0}\x{202f}]*:$`),       // French
	regexp.MustCompile(`^El\b.{1,300}\bescribió\s*:$`),                          // Spanish
	regexp.MustCompile(`^Op\b.{1,300}\bschreef\b.{0,200}:$`),                    // Dutch
	regexp.MustCompile(`^Il\b.{1,300}\bha\s+scritto\s*:$`),                      // Italian
	regexp.MustCompile(`^(Em|Às)\b.{1,300}\bescreveu\s*:$`),                     // Portuguese
	regexp.MustCompile(`^.{0,200}\d.{0,200}\bskrev\b.{0,200}:$`),                // Swedish, Danish, Norwegian
	regexp.MustCompile(`^W dniu\b.{1,300}\bpisze:$`),                            // Polish
	regexp.MustCompile(`^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}.{0,200}<[^>]+@[^>]+>:$`), // Gmail, some locales
}

// lineRule is a regexp run on single body lines behind a cheap test that
// every line it matches passes: most lines of a long body start with none
// of the words these look for, and a regexp call costs more than the scan
// of a short line. FuzzReplyFilters holds each may to its re.
type lineRule struct {
	re  *regexp.Regexp
	may func(line string) bool
}

func (r lineRule) match(line string) bool { return r.may(line) && r.re.MatchString(line) }

// firstByteIn is a lineRule.may: the line starts with one of bytes.
func firstByteIn(bytes string) func(string) bool {
	return func(line string) bool { return line != "" && strings.IndexByte(bytes, line[0]) >= 0 }
}

var (
	// attributionStart: the words an attribution line begins with; a line
	// starting with one and not ending in ':' may be wrapped onto the next.
	attributionStart = lineRule{regexp.MustCompile(`^(On|Am|Le|El|Op|Il|Em|Den|På|W dniu)\s`), firstByteIn("OALEIDPW")}
	originalMessage  = lineRule{regexp.MustCompile(`(?i)^-{2,}\s*(original message|ursprüngliche nachricht|message d'origine|mensaje original|oorspronkelijk bericht|messaggio originale|mensagem original|originalmeddelande|oprindelig meddelelse|opprinnelig melding)\s*-{2,}$`), firstByteIn("-")}
	outlookSeparator = lineRule{regexp.MustCompile(`^_{20,}$`), firstByteIn("_")}
	// The words' first letters either case, after an optional '*'; 0xD0
	// leads Cyrillic о and О.
	outlookFrom = lineRule{regexp.MustCompile(`(?i)^\*?(from|von|de|van|da|från|fra|od|от)\s*:\*?\s*\S`),
		func(line string) bool { return firstByteIn("fFvVdDoO\xd0")(strings.TrimPrefix(line, "*")) }}
)

var (
	outlookSent = regexp.MustCompile(`(?i)^\*?(sent|date|gesendet|datum|envoyé|enviado|verzonden|inviato|data|skickat|sendt|wysłano|отправлено)\s*:`)
	outlookTo   = regexp.MustCompile(`(?i)^\*?(to|an|à|a|para|aan|till|til|do|кому|subject|betreff|objet|asunto|onderwerp|oggetto|assunto|ämne|emne|temat|тема)\s*:`)
)

// ExtractReply returns the new content of a plain-text message body with
// quoted history removed: ">" lines, everything from a reply header ("On …
// wrote:" and its translations, Outlook From/Sent blocks, "-----Original
// Message-----", Outlook's underscore separator) onward, and a trailing
// signature after a "-- " line. If nothing would remain, it returns the
// trimmed original rather than "".
func ExtractReply(text string) string {
	text = normalizeNewlines(text)
	lines := strings.Split(text, "\n")
	hs := &historyScanner{lines: lines}
	cut := len(lines)
	for i := range lines {
		if hs.isHistoryStart(i) {
			cut = i
			break
		}
	}
	kept := make([]string, 0, cut)
	// verbatim: every line before the cut is kept as it is, so the result
	// is a substring of text and needs no copy (most new mail, and the new
	// part of most replies).
	verbatim := true
	for _, l := range lines[:cut] {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), ">") {
			verbatim = false
			continue
		}
		t := strings.TrimRight(l, " \t\r")
		verbatim = verbatim && len(t) == len(l)
		kept = append(kept, t)
	}
	// Drop leading and trailing blank lines, keep inner spacing.
	first := 0 // of kept's lines, dropped
	for len(kept) > 0 && strings.TrimSpace(kept[0]) == "" {
		kept = kept[1:]
		first++
	}
	for len(kept) > 0 && strings.TrimSpace(kept[len(kept)-1]) == "" {
		kept = kept[:len(kept)-1]
	}
	var out string
	switch {
	case len(kept) == 0:
	case verbatim:
		// kept is lines[first:first+len(kept)], and text is lines joined.
		start := 0
		for _, l := range lines[:first] {
			start += len(l) + 1
		}
		n := len(kept) - 1
		for _, l := range kept {
			n += len(l)
		}
		out = text[start : start+n]
	default:
		out = strings.Join(kept, "\n")
	}
	if strings.TrimSpace(out) == "" {
		return strings.TrimSpace(text)
	}
	return out
}

// historyScanner looks for the start of quoted history in a body's lines.
type historyScanner struct {
	lines []string
	// fields caches which Outlook header field each line is, computed on
	// first use: every "From:" line looks at the six lines after it, and a
	// body made of "From:" lines would otherwise run those regexps on every
	// line six times over.
	fields []outlookField
}

type outlookField uint8

const (
	fieldUnknown outlookField = iota // not computed yet
	fieldNone
	fieldSent
	fieldTo
)

func (hs *historyScanner) field(j int) outlookField {
	if hs.fields == nil {
		hs.fields = make([]outlookField, len(hs.lines))
	}
	if hs.fields[j] == fieldUnknown {
		next := strings.TrimSpace(hs.lines[j])
		switch {
		case outlookSent.MatchString(next):
			hs.fields[j] = fieldSent
		case outlookTo.MatchString(next):
			hs.fields[j] = fieldTo
		default:
			hs.fields[j] = fieldNone
		}
	}
	return hs.fields[j]
}

// isHistoryStart reports whether lines[i] starts quoted history or a
// signature.
func (hs *historyScanner) isHistoryStart(i int) bool {
	lines := hs.lines
	raw := lines[i]
	// RFC 3676 §4.3: the signature separator is "-- ".
	// QUIRK: many clients strip the trailing space, leaving "--".
	if strings.TrimRight(raw, " \r") == "--" {
		return true
	}
	line := strings.TrimSpace(raw)
	if line == "" {
		return false
	}
	if isAttribution(line) {
		return true
	}
	// QUIRK: attribution lines wrapped by the sender's client, e.g.
	// "On Mon, 3 Feb 2020 at 10:00, Jane Doe <jane@example.com>" / "wrote:".
	if attributionStart.match(line) {
		joined := line
		for j := i + 1; j < len(lines) && j <= i+2; j++ {
			next := strings.TrimSpace(lines[j])
			if next == "" || strings.HasPrefix(next, ">") {
				break
			}
			joined += " " + next
			if isAttribution(joined) {
				return true
			}
		}
	}
	if originalMessage.match(line) {
		return true
	}
	if outlookSeparator.match(line) {
		// QUIRK: Outlook's plain-text reply separator; only history when a
		// From: header block follows, since people draw lines too.
		for j := i + 1; j < len(lines) && j <= i+3; j++ {
			if next := strings.TrimSpace(lines[j]); next != "" {
				return outlookFrom.match(next)
			}
		}
		return false
	}
	if outlookFrom.match(line) {
		// QUIRK: Outlook's reply header has no attribution line, only a
		// From:/Sent:/To:/Subject: block.
		sent, to := false, false
		for j := i + 1; j < len(lines) && j <= i+6; j++ {
			switch hs.field(j) {
			case fieldSent:
				sent = true
			case fieldTo:
				to = true
			}
		}
		return sent && to
	}
	return false
}

func isAttribution(line string) bool {
	if !strings.HasSuffix(line, ":") {
		return false
	}
	for _, re := range attributionLines {
		if re.MatchString(line) {
			return true
		}
	}
	return false
}
