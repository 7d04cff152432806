package api

import "github.com/inboxd/inboxd/app"

// cursorTTL is the lifetime of a list cursor, which app signs and checks.
const cursorTTL = app.CursorTTL
