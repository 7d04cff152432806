package store

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/inboxd/inboxd/message"
)

// The fast decoders agree with encoding/json on what ingest writes, for
// names and ids with quotes, escapes, HTML characters and non-ASCII text.
func TestJSONColumnsRoundTrip(t *testing.T) {
	names := []string{"", "Ann", `Ann "the" O'Neil`, "Jürgen Groß", "山田 太郎", "a\\b", "tab\there", "<b>&amp;</b>", "emoji 😀", "\u2028x"}
	var as []message.Address
	for i, n := range names {
		as = append(as, message.Address{Email: "user" + string(rune('a'+i)) + "@example.com", Name: n})
	}
	for i := range as {
		checkDecode(t, jsonList(as[:i]))
		checkDecode(t, jsonOrNull(&as[i]))
	}
	checkDecode(t, jsonIDs([]string{"a@b", "x<y>@z", `q"uote@x`, "ünï@example.org"}))
}

func FuzzJSONColumns(f *testing.F) {
	f.Add(`[{"email":"a@b","name":null},{"email":"c@d","name":"C \u003cD\u003e"}]`)
	f.Add(`["\u003ca@b\u003e","\u003cc@d\u003e"]`)
	f.Add(`{"email":"a@b","name":"\ud83d\ude00"}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, src string) { checkDecode(t, src) })
}

// checkDecode fails when a fast decoder accepts src and encoding/json
// disagrees (or rejects it). Inputs neither accepts are fine.
func checkDecode(t *testing.T, src string) {
	t.Helper()
	var fast, slow Address
	if j := (jsonScan{s: src, ok: true}); func() bool { j.address(&fast); return j.ok && j.s == "" }() {
		if err := json.Unmarshal([]byte(src), &slow); err != nil || !reflect.DeepEqual(fast, slow) {
			t.Errorf("address %q: fast %+v, encoding/json %+v (%v)", src, fast, slow, err)
		}
	}
	var fastList, slowList []Address
	if err := decodeAddresses(src, &fastList); err == nil {
		if err := json.Unmarshal([]byte(src), &slowList); err != nil || !equalish(fastList, slowList) {
			t.Errorf("addresses %q: fast %+v, encoding/json %+v (%v)", src, fastList, slowList, err)
		}
	}
	var fastIDs, slowIDs []string
	if err := decodeStrings(src, &fastIDs); err == nil {
		if err := json.Unmarshal([]byte(src), &slowIDs); err != nil || !equalish(fastIDs, slowIDs) {
			t.Errorf("strings %q: fast %q, encoding/json %q (%v)", src, fastIDs, slowIDs, err)
		}
	}
}

// equalish is DeepEqual with nil and empty slices equal.
func equalish[T any](a, b []T) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}
