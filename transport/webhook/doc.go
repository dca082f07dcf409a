// Package webhook tells subscribers about videos: the fan-out (Fanout)
// turns each finished or playable video into one delivery per matching
// subscription, a message in the KINO_DELIVERIES work queue, and the
// sender (Deliverer) POSTs each one, signed, retrying after a backoff and
// recording every attempt as an event. Both are durable consumers shared
// by every process that runs them, and both read the event stream only,
// never the read models. What a receiver gets, and the retry schedule, are
// in docs/webhooks.md.
//
//	KINO_EVENTS                                 KINO_DELIVERIES (work queue)
//	video.*.TranscodePlayable  ─┐
//	video.*.TranscodeSucceeded ─┤                delivery.<webhookId>
//	video.*.TranscodeFailed  ───┴─► webhook-fanout ──────────► webhook-delivery ──POST──► receiver
//	                                                                  │
//	                              webhook.<id>.DeliverySucceeded/Failed ▼
//	                                                             KINO_EVENTS ─► projector
//
// # Fan-out
//
// The durable webhook-fanout on KINO_EVENTS, filtered to TranscodePlayable,
// TranscodeSucceeded and TranscodeFailed, takes one event at a time per
// process. Every kino serve runs it, and so does every kino worker given
// --cdn-url. It is created at the stream's end (WorkConfig.OnlyNew): the
// first process with the fan-out sends nothing for videos that finished
// before it; once created it resumes where it stopped.
//
// A delivery says what the event at stream sequence S announced, whenever
// the fan-out gets to it: the video as it stood at S, to the account's
// subscriptions as they stood at S. So the same event fanned out twice, by
// one process or two, queues the same bodies for the same subscriptions.
// A video deleted (or its collection renamed) after S is still announced
// as it was, and its media URLs may answer 404 by then.
// For each event:
//
//  1. A TranscodeFailed that is not final is acked: a retry follows. A
//     TranscodePlayable is video.playable, unless another
//     TranscodePlayable came before it in the same processing run (since
//     the upload or the last TranscodeRetried): its subscribers know.
//  2. The video at S (foldAt): its events up to S (eventstore.Between on
//     video.<id>.*) folded as the projector folds them, the collection's
//     name being the upload's or the last CollectionRenamed of that slug
//     before S. No UploadAccepted before S, or a Deleted before S, is a
//     forged event: logged and acked. The owner is the upload's account.
//  3. The subscriptions at S: the account's subscriptions subscribed
//     before S and not deleted before S, whose events hold the kind.
//     Subscription subjects do not name the account, so each process
//     keeps an index in memory (subscriptions): every subscription's id,
//     account, events and the sequences of its WebhookSubscribed and
//     WebhookDeleted, read from webhook.*.WebhookSubscribed and
//     webhook.*.WebhookDeleted and brought up to S before each fan-out:
//     the first fan-out reads every subscription event once, later ones
//     only those appended since. Each walk first reads the last sequence
//     of its type (eventstore.LastOf) and stops there, never asking for a
//     next one that does not exist: with more than 64k subjects in the
//     stream, JetStream answers that by reading every message after the
//     walk's start, and a fan-out behind by many events would pay it at
//     each one. Once deleted entries outnumber live ones
//     (and 1024), those deleted at or below the consumer's ack floor are
//     dropped; an event at or below that horizon (a consumer reset by
//     hand) rebuilds the index from the stream first. The index costs
//     memory in every process running the fan-out: a million
//     subscriptions would be on the order of 100 MB, and that many reads
//     at its first fan-out.
//  4. The body is built once: {"id": <event id>, "type", "createdAt":
//     <occurredAt>, "data": {"video": ...}}, the wire.Video the API
//     answers, rendered with this process's --cdn-url.
//  5. Enqueue puts one message per subscription on delivery.<webhookId>:
//     the exact body to POST, Nats-Msg-Id <event id>.<webhook id> (the
//     queue drops a duplicate within 24 h, so fanning out again never
//     doubles a delivery), and the headers the sender needs
//     (Kino-Webhook-Id, Kino-Delivery-Id, Kino-Event-Kind, Kino-Event-Id,
//     Kino-Video-Id, Kino-Account, Kino-Attempts-Counted). The delivery id
//     is DeliveryID: dlv_ and the first 12 bytes of
//     SHA-256(<event id>:<webhook id>) in hex. Every 100 subscriptions the
//     job reports progress, so a large fan-out does not outlast its ack
//     wait.
//  6. Ack. On an error the event is handed back and fanned out again after
//     1 s.
//
// Steps 2 and 3 read with eventstore.Next, Between and LastOf, answered by
// the stream's leader rather than any replica, so once the event at S has
// been delivered "nothing more on this subject" (or a last sequence below
// S) means nothing up to S was missed. Every process running the fan-out must have the same --cdn-url:
// the first body queued wins.
//
// Tester.SendTest (POST /v1/webhooks/{id}/test) enqueues the same way, with
// a fresh id as the event id and {"webhook": {...}} as data.
//
// # Sending
//
// The durable webhook-delivery on KINO_DELIVERIES (unlimited deliveries,
// since kino counts attempts itself; no cap on messages in flight; ack wait
// Config.Timeout + 30 s) is shared by every process with --webhook-workers
// ≥ 1, each running that many sends at once (Config.Workers, default 4)
// and fetching one message at a time. Two KV buckets hold what the senders
// of all processes agree on (queue.SendState, opened by Run):
// KINO_SEND_LOCKS (webhook id → 1; memory on one server, files when
// replicated; TTL 30 s, SendLockTTL) and KINO_DELIVERY_ATTEMPTS (delivery
// id → attempts started; files; TTL 7 days). For each message:
//
//  1. Take the subscription's send lock (a KV create, which fails when the
//     key exists). When another sender holds it, the message is handed
//     back after 250 ms × its delivery count, at most 10 s, and nothing
//     else happens. So at most one POST per subscription is under way
//     across all processes, and a receiver that never answers holds one
//     sender for one timeout at a time. The holder rewrites the lock every
//     10 s while its attempt runs and deletes it (at its own revision) at
//     the end; a crashed sender's lock lapses 30 s after its last rewrite.
//     A sender frozen for longer loses its lock the same way (logged:
//     send lock lost), and another may then POST to the subscription too.
//  2. Read the subscription with eventstore.Current (three direct gets
//     however many attempts it has recorded). A deleted one (or one that
//     no longer wants the kind) drops the delivery.
//  3. The attempt number is one more than the count in
//     KINO_DELIVERY_ATTEMPTS, not the message's delivery count, which busy
//     handbacks raise too. A number past len(Config.Backoff) + 1 (the
//     sender of the last attempt died) records a DeliveryFailed with
//     gaveUp and "gave up: the last attempt was interrupted". Otherwise the
//     count is raised (compare-and-set) before the POST, so a POST cut off
//     by a crash or a shutdown still counts. A message without
//     Kino-Attempts-Counted takes at least its delivery count.
//  4. Open the signing secret (Opener; a v1 subscription's clear secret as
//     it is). A secret that does not open (this process has another secret
//     key than kino serve) is never replaced by an unsigned POST: the
//     message comes back in a minute, logged as an error.
//  5. POST the body with the delivery client.
//  6. Success: record DeliverySucceeded, ack, forget the count. Failure:
//     record DeliveryFailed (gaveUp on the last attempt), then ack and
//     forget the count if it was the last, else hand the message back
//     after Config.Backoff[n-1] (DefaultBackoff: 10s, 30s, 2m, 10m, 30m,
//     1h, 3h, 6h).
//  7. Release the lock.
//
// Attempts are recorded with Config.Store's Record on
// webhook.<id>.DeliverySucceeded or .DeliveryFailed, without the
// concurrency check: nothing is decided from them; the projector turns them
// into the deliveries log. A shutdown cuts off a running POST: the message
// is released and nothing recorded, but the count was raised. A failure to
// read the subscription or the count (NATS unreachable) hands the message
// back for 1 s without an attempt number.
//
// Redeliverer (POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver)
// rebuilds the body the first delivery sent (for a video event, the video
// folded up to that event, found by its id among the video's events; for a
// test, the subscription with the test's id and the instant in that ULID),
// queues it as delivery RedeliveryID (dlv_ + SHA-256(redeliver:<old
// id>:<webhook id>)[:12], also its Nats-Msg-Id, so two nodes redelivering
// at once queue one message), and records DeliveryRedelivered. The sender
// treats it as any delivery. The API checks beforehand that the delivery
// gave up and was not redelivered.
//
// # The delivery client
//
// client.go: an http.Client with no proxy, one timeout (Config.Timeout,
// --webhook-timeout, default 10 s) for the whole exchange, and no redirects
// (a 3xx is the answer). It reads at most 64 KiB of the answer
// (MaxResponseBody). Unless Config.AllowPrivate (--webhooks-allow-private),
// the dialer's Control hook refuses every internal address (loopback,
// private, link-local, multicast, unspecified, reserved ranges; IPv6 only
// in 2000::/3, and the IPv4 address inside 6to4 and NAT64 checked too):
// Control runs on the address about to be dialled, after DNS resolution,
// so a name resolving to an internal address is refused, and an answer
// that changes between a check and the dial cannot get around it.
//
// What a failed attempt records as its error (the tenant reads it) is a
// fixed phrase chosen from the error's type (describeErr), never Go's
// error text, which names the server's resolver, its local address and the
// internal address a name resolved to. The full error goes to the log
// ("cause" on "webhook attempt failed; retrying" and "webhook delivery
// given up").
package webhook
