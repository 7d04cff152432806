package web

import "net/http"

// counts answers the figures shown beside an inbox (app.InboxCounts): a
// count the key may not read is null.
func (c *Console) counts(w http.ResponseWriter, r *http.Request) {
	caller, err := c.caller(r)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	n, err := c.app.InboxCounts(r.Context(), caller, r.PathValue("inbox_id"))
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"threads": n.Threads, "messages": n.Messages,
		"pending_approvals": n.PendingApprovals, "deferred": n.Deferred})
}

// deliveryJSON is one recipient of an outbound message with its delivery
// status and the last SMTP answer about it: more than the message
// object's recipients carry.
type deliveryJSON struct {
	Email          string  `json:"email"`
	Type           string  `json:"type"`
	DeliveryStatus string  `json:"delivery_status"`
	SMTPCode       *int    `json:"smtp_code"`
	SMTPMessage    *string `json:"smtp_message"`
}

// deliveries answers the recipients of a message with their statuses
// ([] for inbound mail).
func (c *Console) deliveries(w http.ResponseWriter, r *http.Request) {
	caller, err := c.caller(r)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	v, err := c.app.Message(r.Context(), caller, r.PathValue("inbox_id"), r.PathValue("message_id"))
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	out := make([]deliveryJSON, 0, len(v.Deliveries))
	for _, d := range v.Deliveries {
		out = append(out, deliveryJSON{Email: d.Email, Type: d.Type, DeliveryStatus: d.Status, SMTPCode: d.Code, SMTPMessage: d.Message})
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
}
