package thread

import (
	"fmt"
	"strings"
	"testing"
)

func TestReplyHelpers(t *testing.T) {
	for in, want := range map[string]string{"Quote": "Re: Quote", "Re: Quote": "Re: Quote", "RE: x": "RE: x", "AW: x": "AW: x",
		"Re[2]: x": "Re[2]: x", "RE(3) : x": "RE(3) : x", "Re^2: x": "Re^2: x", "Sv: x": "Sv: x", "Antw: x": "Antw: x",
		"Re[]: x": "Re: Re[]: x", "Re[2 x": "Re: Re[2 x", "Reply: x": "Re: Reply: x", "Re": "Re: Re", "Re(2]: x": "Re: Re(2]: x", "": "Re: "} {
		if got := ReplySubject(in); got != want {
			t.Errorf("ReplySubject(%q) = %q", in, got)
		}
	}
	var long []string
	for i := range 50 {
		long = append(long, fmt.Sprintf("r%d@x", i))
	}
	refs := ReplyReferences(long, []string{"i@x"}, "p@x")
	if len(refs) != maxReferences || refs[0] != "r0@x" || refs[len(refs)-1] != "p@x" || refs[1] != "r32@x" {
		t.Fatalf("trimmed references: %v", refs)
	}
	// RFC 5322 §3.6.4: without References, a parent's In-Reply-To of one
	// id stands in for them; of two, it says nothing for sure.
	for _, c := range []struct {
		irt  []string
		id   string
		want string
	}{{[]string{"i@x"}, "p@x", "i@x p@x"}, {[]string{"i@x"}, "", "i@x"}, {[]string{"i@x", "j@x"}, "p@x", "p@x"}, {nil, "", ""}} {
		if got := strings.Join(ReplyReferences(nil, c.irt, c.id), " "); got != c.want {
			t.Errorf("ReplyReferences(nil, %v, %q) = %q, want %q", c.irt, c.id, got, c.want)
		}
	}
}
