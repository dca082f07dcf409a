// Package adminrpc carries the operator's requests (kino replay) from the
// CLI to the running kino serve over NATS: request and reply on
// kino.admin.<op>, with progress messages before the result. NATS is the
// trust boundary: the embedded server's permissions let only kino serve
// answer.
package adminrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kino-video/kino/eventstore"
)

// Subject prefixes operator requests that a running kino serve
// answers over NATS: kino.admin.<op>. NATS is the trust boundary: on the
// embedded server only the serve and admin roles may publish here (both
// may write any event anyway), and only serve may subscribe, so no other
// client can answer in its place (see permissions).
const Subject = "kino.admin"

// adminMessage is one message of an answer: progress, then a final one.
type adminMessage struct {
	Progress json.RawMessage `json:"progress,omitempty"`
	Done     bool            `json:"done,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// Handler runs one operator request. send reports progress; the
// returned value is the result.
type Handler func(ctx context.Context, op string, req json.RawMessage, send func(progress any)) (any, error)

// Serve answers operator requests until ctx ends. Each request runs
// in its own goroutine; its answer is a stream of messages to its reply
// subject, ending with one marked done.
func Serve(ctx context.Context, store *eventstore.Store, handle Handler) error {
	nc := store.NATS().NC
	sub, err := nc.Subscribe(Subject+".>", func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		go func() {
			op := strings.TrimPrefix(m.Subject, Subject+".")
			reply := func(msg adminMessage) {
				b, _ := json.Marshal(msg)
				_ = nc.Publish(m.Reply, b)
			}
			reply(adminMessage{}) // received: the caller stops waiting for an answer
			result, err := handle(ctx, op, m.Data, func(p any) {
				if b, err := json.Marshal(p); err == nil {
					reply(adminMessage{Progress: b})
				}
			})
			final := adminMessage{Done: true}
			if err != nil {
				final.Error = err.Error()
			} else if final.Result, err = json.Marshal(result); err != nil {
				final.Error = err.Error()
			}
			reply(final)
			_ = nc.Flush()
		}()
	})
	if err != nil {
		return fmt.Errorf("serve admin: %w", err)
	}
	<-ctx.Done()
	return sub.Unsubscribe()
}

// ErrNoAdmin means no kino serve answered on this NATS.
var ErrNoAdmin = errors.New("no kino serve answered on this NATS")

// Call sends an operator request to a running kino serve, hands each
// progress message to onProgress, and returns the final result.
func Call(ctx context.Context, store *eventstore.Store, op string, req any, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	nc := store.NATS().NC
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	inbox := nc.NewRespInbox()
	msgs := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe(inbox, msgs)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	subject := Subject + "." + op
	if err := nc.PublishRequest(subject, inbox, body); err != nil {
		return nil, err
	}
	// The server answers a refused publish before the flush's pong.
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		return nil, err
	}
	if err := nc.LastError(); errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `"`+subject+`"`) {
		return nil, fmt.Errorf("admin %s: these NATS credentials may not call it: %w", op, eventstore.ErrUnauthorized)
	}
	// Something must answer soon; after the first message the work may
	// take as long as it takes.
	first := time.After(5 * time.Second)
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-first:
			return nil, ErrNoAdmin
		case m := <-msgs:
			if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
				return nil, ErrNoAdmin // the server's "no responders"
			}
			first = nil
			var am adminMessage
			if err := json.Unmarshal(m.Data, &am); err != nil {
				return nil, fmt.Errorf("admin %s: %w", op, err)
			}
			if !am.Done {
				if len(am.Progress) > 0 {
					onProgress(am.Progress)
				}
				continue
			}
			if am.Error != "" {
				return nil, fmt.Errorf("admin %s: %s", op, am.Error)
			}
			return am.Result, nil
		}
	}
}
