package app

import "github.com/inboxd/inboxd/store"

// The store's types an operation returns, named here so that a surface
// that may import only app can name them too.
type (
	Inbox          = store.Inbox
	Thread         = store.Thread
	Message        = store.Message
	Address        = store.Address
	Attachment     = store.Attachment
	DeliveryStatus = store.DeliveryStatus
	Approval       = store.Approval
	BodyParts      = store.BodyParts
)
