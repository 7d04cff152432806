package app

import "github.com/inboxd/inboxd/store"

// The domain objects the operations return. They are the store's rows,
// named here so that a surface (api, mcp, web) imports app alone and never
// reaches the store past the operations (deps_test.go). Only aliases
// belong in this file.
type (
	Inbox           = store.Inbox
	Key             = store.Key
	Thread          = store.Thread
	Message         = store.Message
	Address         = store.Address
	Attachment      = store.Attachment
	DeliveryStatus  = store.DeliveryStatus
	BodyPart        = store.BodyPart
	BodyParts       = store.BodyParts
	Approval        = store.Approval
	WebhookEndpoint = store.WebhookEndpoint
	WebhookDelivery = store.WebhookDelivery
	WebhookAttempt  = store.WebhookAttempt
	Delivered       = store.Delivered
	Event           = store.Event
)
