package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
)

func webhookStream(id string) domain.StreamID {
	return domain.StreamID{Aggregate: domain.AggWebhook, ID: id}
}

// newWebhookSecret is "whsec_" and 32 random bytes in hex.
func newWebhookSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "whsec_" + hex.EncodeToString(b[:]), nil
}

type createdWebhookJSON struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	Secret    string   `json:"secret"`
	CreatedAt string   `json:"createdAt"`
}

// createWebhook answers 201 with the signing secret: the only time it is
// shown.
func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		URL    *string  `json:"url"`
		Events []string `json:"events"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	if body.URL == nil {
		return errBadRequest("url is required")
	}
	if body.Events == nil {
		return errBadRequest("events is required: a non-empty list of %s, %s", domain.EventVideoCompleted, domain.EventVideoFailed)
	}
	secret, err := newWebhookSecret()
	if err != nil {
		return err
	}
	acct := callerOf(r).Account
	id := s.cfg.Store.NewID()
	res, err := execute[domain.Webhook](r, s.cfg.Store, webhookStream(id),
		domain.SubscribeWebhook{Account: acct, URL: *body.URL, Events: body.Events, Secret: secret})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	e := res.Events[0]
	d := e.Data.(domain.WebhookSubscribed)
	writeJSON(w, http.StatusCreated, createdWebhookJSON{
		ID: id, URL: d.URL, Events: d.Events, Secret: d.Secret, CreatedAt: domain.FormatTime(e.OccurredAt),
	})
	return nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	hooks, err := s.cfg.DB.Webhooks(callerOf(r).Account)
	if err != nil {
		return err
	}
	out := make([]webhookJSON, len(hooks))
	for i, h := range hooks {
		out[i] = renderWebhook(h)
	}
	writeJSON(w, http.StatusOK, struct {
		Webhooks []webhookJSON `json:"webhooks"`
	}{out})
	return nil
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return errNotFound("webhook")
	}
	h, ok, err := s.cfg.DB.Webhook(callerOf(r).Account, id)
	if err != nil {
		return err
	}
	if !ok {
		return errNotFound("webhook")
	}
	writeJSON(w, http.StatusOK, renderWebhook(h))
	return nil
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return errNotFound("webhook")
	}
	res, err := execute[domain.Webhook](r, s.cfg.Store, webhookStream(id), domain.DeleteWebhook{Account: callerOf(r).Account})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	writeJSON(w, http.StatusOK, messageJSON{Message: "Webhook deleted"})
	return nil
}
