package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/inboxd/inboxd/store"
)

// parseInterleaved parses flags that may come after positional arguments
// (`inboxd inboxes create a@b --data d`); the positionals are left in
// fs.Args().
func parseInterleaved(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	var positional []string
	for rest := fs.Args(); len(rest) > 0; rest = fs.Args() {
		positional = append(positional, rest[0])
		if err := fs.Parse(rest[1:]); err != nil {
			return flagError(fs, err)
		}
	}
	return fs.Parse(append([]string{"--"}, positional...))
}

// argCount checks that the command line held as many arguments, beside
// its flags, as the command takes: usage is its usage line when it takes
// one, "" when it takes none. A word the command does not take is
// refused, never passed over: `--fsync false` is --fsync and the word
// "false", and flag stops at such a word, dropping every flag after it.
func argCount(fs *flag.FlagSet, usage string) error {
	switch {
	case usage != "" && fs.NArg() != 1:
		return errors.New(usage)
	case usage != "" || fs.NArg() == 0:
		return nil
	case fs.Arg(0) == "true" || fs.Arg(0) == "false":
		return fmt.Errorf("unexpected argument %q: a true/false flag takes its value after =, as --flag=%s (see: inboxd %s --help)", fs.Arg(0), fs.Arg(0), fs.Name())
	}
	return fmt.Errorf("unexpected argument %q (see: inboxd %s --help)", fs.Arg(0), fs.Name())
}

// openData opens the database of --data for a CLI command, once its
// command line holds what argCount(usage) asks; it works alongside a
// running server (WAL, busy timeout).
func openData(ctx context.Context, fs *flag.FlagSet, args []string, getenv func(string) string, usage string) (*store.DB, store.Project, error) {
	data := fs.String("data", "./inboxd-data", "data directory")
	if err := parseInterleaved(fs, args, getenv); err != nil {
		return nil, store.Project{}, err
	}
	if err := argCount(fs, usage); err != nil {
		return nil, store.Project{}, err
	}
	if _, err := os.Stat(filepath.Join(*data, "inboxd.db")); err != nil {
		return nil, store.Project{}, fmt.Errorf("no database in %s: start `inboxd serve --data %s` once first, or pass --data", *data, *data)
	}
	db, err := store.Open(ctx, store.Options{Path: filepath.Join(*data, "inboxd.db")})
	if err != nil {
		return nil, store.Project{}, err
	}
	p, err := db.DefaultProject(ctx)
	if errors.Is(err, store.ErrNotFound) {
		db.Close()
		return nil, store.Project{}, fmt.Errorf("no project in %s yet: start `inboxd serve` once first", *data)
	}
	if err != nil {
		db.Close()
		return nil, store.Project{}, err
	}
	return db, p, nil
}

func inboxesCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: inboxd inboxes create|list|delete")
	}
	if isHelp(args[0]) {
		printGroupUsage(stdout, "inboxes")
		return nil
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("inboxes "+sub, flag.ContinueOnError)
	switch sub {
	case "create":
		name := fs.String("display-name", "", "display name")
		env := fs.String("environment", "live", "live or test")
		const usage = "usage: inboxd inboxes create ADDRESS"
		db, p, err := openData(ctx, fs, args, getenv, usage)
		if err != nil {
			return err
		}
		defer db.Close()
		if !strings.Contains(fs.Arg(0), "@") {
			return errors.New(usage)
		}
		if *env != "live" && *env != "test" {
			return fmt.Errorf("--environment must be live or test")
		}
		ib, err := db.CreateInbox(ctx, p.ID, store.NewInbox{Address: fs.Arg(0), DisplayName: *name, Environment: *env})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\t%s\n", ib.ID, ib.Address)
		return nil
	case "list":
		db, p, err := openData(ctx, fs, args, getenv, "")
		if err != nil {
			return err
		}
		defer db.Close()
		inboxes, err := db.ListInboxes(ctx, p.ID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tADDRESS\tENVIRONMENT\tDISPLAY NAME")
		for _, ib := range inboxes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ib.ID, ib.Address, ib.Environment, ib.DisplayName)
		}
		return tw.Flush()
	case "delete":
		db, p, err := openData(ctx, fs, args, getenv, "usage: inboxd inboxes delete ID|ADDRESS")
		if err != nil {
			return err
		}
		defer db.Close()
		id := fs.Arg(0)
		if strings.Contains(id, "@") {
			ib, err := db.InboxByAddress(ctx, id)
			if err != nil {
				return err
			}
			id = ib.ID
		}
		if err := db.DeleteInbox(ctx, p.ID, id); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "deleted", id)
		return nil
	}
	return fmt.Errorf("unknown inboxes command %q", sub)
}

func keysCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: inboxd keys create|list|revoke")
	}
	if isHelp(args[0]) {
		printGroupUsage(stdout, "keys")
		return nil
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	switch sub {
	case "create":
		name := fs.String("name", "cli", "key name")
		var scopes, inboxes listFlag
		fs.Var(&scopes, "scopes", "comma-separated scopes, or 'all' or 'read'")
		fs.Var(&inboxes, "inboxes", "comma-separated inbox ids the key is limited to (default: all)")
		db, p, err := openData(ctx, fs, args, getenv, "")
		if err != nil {
			return err
		}
		defer db.Close()
		switch {
		case len(scopes) == 1 && scopes[0] == "all":
			scopes = store.AllScopes()
		case len(scopes) == 1 && scopes[0] == "read":
			scopes = store.ReadOnlyScopes()
		case len(scopes) == 0:
			return errors.New("--scopes is required (e.g. --scopes read, --scopes all, --scopes messages:read,messages:send)")
		}
		var ids []string
		if len(inboxes) > 0 {
			ids = inboxes
		}
		k, token, err := db.CreateKey(ctx, p.ID, *name, scopes, ids)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\t%s\n", k.ID, token)
		return nil
	case "list":
		db, p, err := openData(ctx, fs, args, getenv, "")
		if err != nil {
			return err
		}
		defer db.Close()
		keys, err := db.ListKeys(ctx, p.ID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tSCOPES\tINBOXES")
		for _, k := range keys {
			in := "all"
			if k.InboxIDs != nil {
				in = strings.Join(k.InboxIDs, ",")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.TokenPrefix, strings.Join(k.Scopes, ","), in)
		}
		return tw.Flush()
	case "revoke":
		db, p, err := openData(ctx, fs, args, getenv, "usage: inboxd keys revoke KEY_ID")
		if err != nil {
			return err
		}
		defer db.Close()
		if err := db.RevokeKey(ctx, p.ID, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "revoked", fs.Arg(0))
		return nil
	}
	return fmt.Errorf("unknown keys command %q", sub)
}
