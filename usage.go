package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=…"; when it
// is not, buildVersion reads the module version from the build info, which
// `go install …@v1.2.3` records.
var version = ""

// buildVersion is the version inboxd reports: -ldflags' if set, else the
// module's from the build info, else "dev"; with the VCS revision (and
// "+dirty" for a modified tree) when the build recorded one.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	v := version
	if v == "" && ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if v == "" {
		v = "dev"
	}
	if !ok {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && !strings.Contains(v, rev) { // a pseudo-version names its revision already
		if dirty {
			rev += "+dirty"
		}
		v += " (" + rev + ")"
	}
	return v
}

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "inboxd %s %s %s/%s\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// helpRequested is a command's --help: run prints its usage and exits 0.
type helpRequested struct{ fs *flag.FlagSet }

func (h *helpRequested) Error() string { return "help requested" }

// synopsis is the usage line of each command with flags of its own.
var synopsis = map[string]string{
	"serve":          "inboxd [serve] [flags]",
	"inboxes create": "inboxd inboxes create ADDRESS [flags]",
	"inboxes list":   "inboxd inboxes list [flags]",
	"inboxes delete": "inboxd inboxes delete ID|ADDRESS [flags]",
	"keys create":    "inboxd keys create --name N --scopes a,b [flags]",
	"keys list":      "inboxd keys list [flags]",
	"keys revoke":    "inboxd keys revoke KEY_ID [flags]",
	"send":           "inboxd send --to ADDRESS [flags]",
	"backup":         "inboxd backup FILE [flags]",
	"healthcheck":    "inboxd healthcheck [flags]",
	"mcp":            "inboxd mcp --url URL --key KEY [flags]",
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// printGroupUsage prints the usage lines of a command group's commands
// ("inboxes": create, list, delete), for "inboxd inboxes --help".
func printGroupUsage(w io.Writer, group string) {
	fmt.Fprintln(w, "Usage:")
	for _, name := range slices.Sorted(maps.Keys(synopsis)) {
		if strings.HasPrefix(name, group+" ") {
			fmt.Fprintf(w, "  %s\n", synopsis[name])
		}
	}
	fmt.Fprintf(w, "\nEach command's flags: inboxd %s COMMAND --help\n", group)
}

func (h *helpRequested) print(w io.Writer) {
	name := h.fs.Name()
	use := synopsis[name]
	if use == "" {
		use = "inboxd " + name + " [flags]"
	}
	fmt.Fprintf(w, "Usage:\n  %s\n\nFlags (each also read from its environment variable; one set to \"\" counts as unset):\n", use)
	printFlags(w, h.fs)
}

// flagError is a command-line mistake as one line with the way to help:
// Go's flag package says "-name" and prints the whole usage; inboxd says
// "--name" and where the usage is.
func flagError(fs *flag.FlagSet, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return &helpRequested{fs}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		msg = "unknown flag --" + strings.TrimLeft(name, "-")
	} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		msg = "flag --" + strings.TrimLeft(name, "-") + " needs a value"
	} else {
		// flag names a flag with one dash ("invalid value … for flag
		// -max-sessions"); everything else here writes two.
		msg = strings.Replace(msg, " for flag -", " for --", 1)
	}
	return fmt.Errorf("%s (see: inboxd %s --help)", msg, fs.Name())
}
