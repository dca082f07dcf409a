// Package ratelimit is the request-rate algorithm of the API: a sliding
// log per key (at most limit requests in any minute, wherever the minute
// starts), optionally shared between API nodes through a Ledger that holds
// each node's share of a key's budget. It knows nothing of HTTP: callers
// pick the key (an account, a client address, an email) and the limit, and
// turn a refused Decision into their own answer (httpapi: 429 with
// Retry-After and the X-RateLimit-* headers).
//
// # The sliding log
//
// For each key a Limiter keeps the times of the requests it allowed in the
// last Window (60 s), oldest first, in a ring that grows up to the limit:
// 8 bytes per request counted, 8 KB for a key limited to 1000 a minute. A
// request is allowed while fewer than limit are younger than the window,
// so no 60 s span ever holds more than limit allowed requests. (A fixed
// window lets 2x the limit through across its boundary; a token bucket
// its burst plus a minute's refill.) Decision.Reset is when the oldest
// counted request leaves the window, Decision.Retry the wait until one
// more fits. Allow counts; Over and Peek only look, and a key this node
// has not counted is never over, without asking the ledger. Keys with no
// request in the last window are swept once a window, so client
// addresses seen once do not stay.
//
// # Shared between API nodes
//
// NewShared(ledger, prefix, node, log) shares each key (under prefix:
// httpapi uses "acct:", "addr:", "login-addr:", "login-user:") with every
// node on the same NATS through the Ledger, kv.RateLimits on the bucket
// KINO_RATE. One ledger entry per key holds, per node (node: a random id
// per process), a kv.RateHolding: the node's share of the budget, the
// requests it counted and the oldest of them at its last update, and the
// lease (Until) for which the share is held. Ledger.UpdateRate writes a
// node's holding by compare-and-set on the entry's revision, so the shares
// never add up to more than the limit; holdings whose lease lapsed more
// than kv.RateSkew (5 s) ago are ignored and dropped by the next writer.
//
//   - A node allows a request when its own log holds fewer than its share
//     and the lease runs for a whole window after the request. With NATS
//     reachable and clocks within 5 s, the nodes together never allow more
//     than the limit in any 60 s (TestSharedLimitNeverExceedsLimitAcrossNodes).
//   - It updates its holding (one round trip, at most rateTimeout, 1 s)
//     when its log reaches its share, asking for one more request and up
//     to a block beyond (rateBlock: max(1, limit/20)) as far as the other
//     nodes leave room, and when its lease (rateLease, 90 s: the window
//     plus 30 s) has less than 80 s left; a request that still fits is
//     allowed at once and the lease renewed in the background. Each update
//     gives back what the node does not use beyond a block.
//   - Slack is downwards only: N busy nodes can leave up to N blocks of the
//     limit unused in a minute; a node that dies keeps its share until its
//     lease lapses, plus 5 s. A refusal for want of share asks the ledger
//     again at most once a second (rateDryRetry).
//   - Alone on NATS a node takes the whole budget and decides exactly as a
//     process-local limiter (TestSharedLimitAloneIsExact).
//   - The ledger fails (NATS unreachable, or no answer within 1 s): the
//     node fails open and counts alone, with the whole limit, for rateDown
//     (5 s), then asks again; one line is logged per outage, and one when
//     shared again (TestSharedLimitFailsOpenWithoutNATS). Failing closed
//     would turn every NATS blip into refusals of requests the read models
//     can answer.
//   - NATS connected but the ledger silent (its stream electing a leader):
//     a key whose lease still runs is decided within the share held; only
//     keys without a live lease are counted alone
//     (TestSharedLimitKeepsItsShareWhileTheLedgerElects).
//   - A restarted node, or a key swept from a node's memory, forgets its
//     log; its share stays in the ledger until its lease lapses or the
//     node updates it again, so the cluster is not over-allowed.
package ratelimit
