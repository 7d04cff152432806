package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inboxd/inboxd/app"
)

// The size discipline of SPEC §11, in characters (code points) of a
// result's text and of its structured content, each.
const (
	// DefaultMaxChars is what a result holds at most unless the call asks
	// for more: under the 50,000 at which Claude Code starts to keep tool
	// results out of the conversation.
	DefaultMaxChars = 40000
	// HardMaxChars is the most any result holds (declared to clients as
	// _meta["anthropic/maxResultSizeChars"]); a call that cannot be
	// answered within it is an error result that names a narrower one.
	HardMaxChars = 131072
	// MinMaxChars is the least a call may ask for: below about 1,400 not
	// even a one-line message fits beside its metadata, fence and notice,
	// so a smaller max_chars could only ever answer result_too_large.
	MinMaxChars = 2000
)

// result is a tool's answer: its structured content (a JSON object) and
// its text rendering.
type result struct {
	structured []byte
	text       string
}

// size is the larger of the result's two renderings, in characters.
func (r result) size() int {
	return max(utf8.RuneCount(r.structured), utf8.RuneCountInString(r.text))
}

// encode is the JSON of a structured result: as a client's JSON.stringify
// would print it (no HTML escaping), so that its length is what the client
// counts.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// newResult encodes out beside its text.
func newResult(out any, text string) (result, error) {
	b, err := encode(out)
	return result{structured: b, text: text}, err
}

// render builds a result inside the fence it is given. It may be called
// again with another fence (when a string it fenced held the token), so
// it must not change anything.
type render func(f *fence) (result, error)

// handler is what a tool does for a caller with its arguments: the work
// that happens once (an operation's checks, a wait), and the render of
// its outcome.
type handler[In any] func(ctx context.Context, c app.Caller, in *In) (render, error)

// tooLarge is the error result of a call whose answer cannot fit: it
// names the narrower call to make instead (SPEC §11).
type tooLarge struct{ msg string }

func (e *tooLarge) Error() string { return e.msg }

func tooLargef(format string, args ...any) error { return &tooLarge{fmt.Sprintf(format, args...)} }

// addTool registers a tool whose input schema comes from In (descriptions
// from its jsonschema tags) and whose output schema comes from Out. Its
// arguments are decoded strictly (decodeArgs) before h sees them, and
// whatever h answers or fails with becomes a result here: an app error as
// an error result that names its code and argument, anything else as
// "Internal error." with the detail in the log.
func addTool[In, Out any](s *server, t *gomcp.Tool, h handler[In]) {
	in, err := jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: sendSchemas()})
	if err != nil {
		panic(fmt.Sprintf("mcp: tool %s: input schema: %v", t.Name, err))
	}
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: tool %s: output schema: %v", t.Name, err))
	}
	t.InputSchema, t.OutputSchema = in, out
	s.mcp.AddTool(t, func(ctx context.Context, req *gomcp.CallToolRequest) (res *gomcp.CallToolResult, _ error) {
		defer func() {
			if p := recover(); p != nil {
				res = s.errorResult(t.Name, fmt.Errorf("panic: %v", p))
			}
		}()
		c, ok := callerOf(req)
		if !ok {
			return s.errorResult(t.Name, errors.New("no caller in the request")), nil
		}
		args, err := decodeArgs[In](req.Params.Arguments, in)
		if err != nil {
			return s.errorResult(t.Name, err), nil
		}
		r, err := h(ctx, c, args)
		if err != nil {
			return s.errorResult(t.Name, err), nil
		}
		out, err := s.fenced(r)
		if err != nil {
			return s.errorResult(t.Name, err), nil
		}
		return &gomcp.CallToolResult{Content: []gomcp.Content{&gomcp.TextContent{Text: out.text}},
			StructuredContent: json.RawMessage(out.structured)}, nil
	})
}

// fenced renders r inside a fresh fence, and again inside another when
// one of its strings held the token.
func (s *server) fenced(r render) (result, error) {
	for range 3 {
		f, err := newFence(s.rand)
		if err != nil {
			return result{}, err
		}
		out, err := r(f)
		if err != nil || !f.collided {
			return out, err
		}
		s.log.Warn("mcp: a fenced string held the fence token; rendering again with another")
	}
	return result{}, errors.New("mcp: three fence tokens in a row found in the result")
}

// errorResult is the one place an error becomes a tool's error result.
func (s *server) errorResult(tool string, err error) *gomcp.CallToolResult {
	var big *tooLarge
	var text string
	switch code := app.ErrorCode(err); {
	case errors.As(err, &big):
		text = "Error (result_too_large): " + big.msg
	case code == app.EInternal:
		s.log.Error("mcp: internal error", "tool", tool, "err", err)
		text = "Error (internal): Internal error."
	default:
		text = "Error (" + code
		if p := app.ErrorParam(err); p != "" {
			text += ", argument " + p
		}
		text += "): " + app.ErrorMessage(err)
	}
	return &gomcp.CallToolResult{IsError: true, Content: []gomcp.Content{&gomcp.TextContent{Text: text}}}
}

// decodeArgs reads a call's arguments into an In, strictly: an argument
// the tool does not take and one missing that it requires are
// invalid_request errors that name it; a value of the wrong type, or an
// unknown field inside an argument, is app.DecodeJSON's error, as on the
// REST routes, which names the value by its full path (to[0]).
func decodeArgs[In any](raw json.RawMessage, schema *jsonschema.Schema) (*In, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, app.Invalidf("", "The arguments must be a JSON object.")
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if _, ok := schema.Properties[k]; !ok {
			return nil, app.Invalidf(k, "Unknown argument %q; this tool takes %s.", k, strings.Join(slices.Sorted(maps.Keys(schema.Properties)), ", "))
		}
	}
	for _, k := range schema.Required {
		if v, ok := fields[k]; !ok || string(v) == "null" {
			return nil, app.Invalidf(k, "%s is required.", k)
		}
	}
	// JSON Schema's integer is any number with no fraction: 5.0 and 5e0
	// are 5, and hosts whose numbers are all floats send them so.
	integral := false
	for k, v := range fields {
		if p := schema.Properties[k]; p != nil && (p.Type == "integer" || slices.Contains(p.Types, "integer")) {
			if f, err := strconv.ParseFloat(string(v), 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				if n := strconv.FormatInt(int64(f), 10); n != string(v) {
					fields[k], integral = json.RawMessage(n), true
				}
			}
		}
	}
	if integral {
		raw, _ = json.Marshal(fields)
	}
	in := new(In)
	if err := app.DecodeJSON(raw, in); err != nil {
		return nil, err
	}
	return in, nil
}
