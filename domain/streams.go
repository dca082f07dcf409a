package domain

// Every stream id and subject filter of kino is built here (and by
// CollectionStream), so the subject layout <aggregate>.<id>.<EventType>
// lives in one place.

// VideoStream names a video's stream.
func VideoStream(id string) StreamID { return StreamID{Aggregate: AggVideo, ID: id} }

// AccountStream names an account's stream.
func AccountStream(slug string) StreamID { return StreamID{Aggregate: AggAccount, ID: slug} }

// WebhookStream names a webhook subscription's stream.
func WebhookStream(id string) StreamID { return StreamID{Aggregate: AggWebhook, ID: id} }

// StreamOf names the stream an event of aggregate kind aggregate and id
// belongs to.
func StreamOf(aggregate, id string) StreamID { return StreamID{Aggregate: aggregate, ID: id} }

// TypeFilter is the subject filter matching every event of type eventType
// of every aggregate of kind aggregate, e.g. "video.*.UploadAccepted".
func TypeFilter(aggregate, eventType string) string { return aggregate + ".*." + eventType }
