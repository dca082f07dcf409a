// Package webhooks serves an account's webhook subscriptions under
// /v1/webhooks: create (the signing secret shown once, sealed before it is
// stored), list, get, delete, the deliveries log, test deliveries (a token
// bucket per subscription: 5 at once, then one every 12 s, so a caller
// cannot queue thousands behind a receiver that never answers) and
// redelivery of a delivery that gave up (one decision at a time on a node;
// across nodes the redelivery's fixed id keeps the queue to one message).
//
// Subscriptions are events (WebhookSubscribed, WebhookDeleted); the lists
// come from the read models. Sending is package transport/webhook's; this
// package only asks it, through Tester and Redeliverer. The API server
// mounts it and authenticates the caller (Host).
package webhooks
